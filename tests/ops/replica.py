"""A real streaming replica of the test's PostgreSQL: ``pg_basebackup`` of the running
cluster into a temporary directory, a second ``postgres`` on a free loopback port, run as
the postgres OS user (the server refuses root), stopped and removed after.

``replica_unavailable()`` says why one cannot be started here (no PostgreSQL binaries, no
replication entry in the primary's pg_hba.conf, ...): the tests skip with that reason on a
developer's machine, and ``.ci/run`` installs and allows what they need.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from tests.live_service import free_port


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def _as_postgres(*command: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["runuser", "-u", "postgres", "--", *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class StreamingReplica:
    def __init__(self, primary: dict) -> None:
        self.primary = primary  # the primary's Django settings dict
        self.bin = _bin_dir()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="attest-replica-"))
        self.data = self.dir / "data"
        account = pwd.getpwnam("postgres")
        os.chown(self.dir, account.pw_uid, account.pw_gid)

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def url(self, database: str) -> str:
        return f"postgres://{self.primary['USER']}@127.0.0.1:{self.port}/{database}"

    def _primary_setting(self, name: str) -> str:
        with self.connect_primary() as conn:
            return conn.execute(f"SHOW {name}").fetchone()[0]

    def connect_primary(self) -> psycopg.Connection:
        return psycopg.connect(
            host=self.primary["HOST"] or "127.0.0.1",
            port=int(self.primary["PORT"] or 5432),
            user=self.primary["USER"],
            dbname=self.primary["NAME"],
            autocommit=True,
        )

    def connect(self, database: str) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.primary["USER"],
            dbname=database,
            autocommit=True,
        )

    def start(self) -> StreamingReplica:
        try:
            return self._start()
        except BaseException:
            self.remove()
            raise

    def _start(self) -> StreamingReplica:
        backup = _as_postgres(
            str(self.bin / "pg_basebackup"),
            "-h",
            self.primary["HOST"] or "127.0.0.1",
            "-p",
            str(self.primary["PORT"] or 5432),
            "-U",
            "postgres",
            "-D",
            str(self.data),
            "-X",
            "stream",
            "-R",  # standby.signal and primary_conninfo: start as a streaming standby
            "-c",
            "fast",  # checkpoint now rather than wait for a spread one
        )
        if backup.returncode != 0:
            raise RuntimeError(f"pg_basebackup failed: {backup.stderr[-2000:]}")
        # A Debian cluster keeps its configuration in /etc: the copy needs its own. A hot
        # standby must allow at least as much as its primary.
        settings = {
            name: self._primary_setting(name)
            for name in (
                "max_connections",
                "max_worker_processes",
                "max_wal_senders",
                "max_prepared_transactions",
                "max_locks_per_transaction",
            )
        }
        conf = [
            "listen_addresses = '127.0.0.1'",
            f"port = {self.port}",
            f"unix_socket_directories = '{self.dir}'",
            "hot_standby = on",
            "shared_buffers = 32MB",
            "track_counts = on",
            *(f"{name} = {value}" for name, value in settings.items()),
        ]
        files = {
            "postgresql.conf": "\n".join(conf) + "\n",
            "pg_hba.conf": "local all all trust\nhost all all 127.0.0.1/32 trust\n",
            "pg_ident.conf": "",
        }
        for name, text in files.items():
            path = self.data / name
            path.write_text(text)
            shutil.chown(path, "postgres", "postgres")
        started = _as_postgres(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.dir / "replica.log"),
            "-w",
            "-t",
            "120",
            "start",
        )
        if started.returncode != 0:
            log = (
                (self.dir / "replica.log").read_text()
                if (self.dir / "replica.log").exists()
                else ""
            )
            raise RuntimeError(f"the replica did not start: {started.stderr}{log[-2000:]}")
        self.wait_caught_up()
        return self

    def replay_lsn(self) -> str:
        with self.connect("postgres") as conn:
            return conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()[0]

    def wait_caught_up(self, timeout: float = 60) -> None:
        """Until the replica has replayed everything the primary has written so far."""
        with self.connect_primary() as conn:
            target = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.connect("postgres") as conn:
                    done = conn.execute(
                        "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]
                    ).fetchone()[0]
                if done:
                    return
            except psycopg.OperationalError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the replica did not catch up with {target}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.data.exists():
            _as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def replica_unavailable(primary: dict) -> str | None:
    """Why no streaming replica can be started here, or None."""
    if primary["ENGINE"] != "django.db.backends.postgresql":
        return "needs PostgreSQL (set DATABASE_URL=postgres://...)"
    if _bin_dir() is None:
        return "needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)"
    if shutil.which("runuser") is None or os.geteuid() != 0:
        return "needs root, to run the replica's postgres as the postgres user"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "needs the postgres OS user"
    host = primary["HOST"] or "127.0.0.1"
    probe = _as_postgres(
        "psql",
        f"host={host} port={primary['PORT'] or 5432} user=postgres replication=true",
        "-c",
        "IDENTIFY_SYSTEM",
        timeout=30,
    )
    if probe.returncode != 0:
        return (
            "the primary refuses replication connections from loopback: add "
            "'host replication postgres 127.0.0.1/32 trust' to its pg_hba.conf (.ci/run does)"
        )
    return None
