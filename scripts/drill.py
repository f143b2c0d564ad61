"""Operations drills: what the service answers while a dependency fails under load.

    .venv/bin/python scripts/drill.py db-restart   # PostgreSQL restarted under load
    .venv/bin/python scripts/drill.py dead-worker  # a gunicorn worker killed under load
    .venv/bin/python scripts/drill.py disk-full    # the database's disk fills up
    .venv/bin/python scripts/drill.py all

Each drill starts its own throwaway parts (a PostgreSQL cluster in a temporary
directory, gunicorn on its own ports), drives real requests at them, breaks one
thing, and prints what every request got back. Nothing shared is touched. The
PostgreSQL and disk drills need root (they run initdb as the postgres user and
mount a small tmpfs). docs/operations.md quotes the last figures.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GUNICORN = str(Path(PYTHON).with_name("gunicorn"))
SECRET = "drill-only-secret-" + "x" * 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def base_env(var: Path, database_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "DATABASE_URL"))}
    return {
        **keep,
        "ATTEST_VAR_DIR": str(var),
        "DATABASE_URL": database_url,
        "CACHE_URL": "locmemcache://drill",
        "SECRET_KEY": SECRET,
        "LOG_LEVEL": "CRITICAL",
    }


# --- the parts ------------------------------------------------------------------


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _pg_bin(name: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(found[-1]) if found else name


class Cluster:
    """A throwaway PostgreSQL cluster in a directory of its own, on a port of its own."""

    def __init__(self, directory: Path) -> None:
        self.data = directory / "pgdata"
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres", "postgres")
        subprocess.run(
            _as_postgres(
                [_pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"]
            ),
            check=True,
            capture_output=True,
        )
        self.options = f"-p {self.port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"

    def ctl(self, *args: str) -> float:
        started = time.monotonic()
        subprocess.run(
            _as_postgres(
                [
                    _pg_bin("pg_ctl"),
                    "-D",
                    str(self.data),
                    "-o",
                    self.options,
                    "-w",
                    *args,
                    "-l",
                    str(self.data.parent / "pg.log"),
                ]
            ),
            check=True,
            capture_output=True,
        )
        return time.monotonic() - started

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def createdb(self, name: str) -> None:
        subprocess.run(
            [_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name],
            check=True,
            capture_output=True,
        )


@contextlib.contextmanager
def gunicorn(env: dict[str, str], workers: int = 2) -> Iterator[tuple[str, subprocess.Popen]]:
    port = free_port()
    process = subprocess.Popen(
        [GUNICORN, "attest.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.2)
        yield base, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def prepared_ledger(env: dict[str, str]) -> str:
    """Migrate, create a project and ingest one fact; the project's credential."""
    manage(env, "migrate", "--noinput")
    manage(env, "ensure_signing_key")
    return manage(env, "create_project", "drill").strip().splitlines()[-1].strip()


# --- load -----------------------------------------------------------------------


class Load:
    """Clients sending one request after another, each answer kept with its time."""

    def __init__(self, send: Callable[[httpx.Client], httpx.Response], clients: int = 4) -> None:
        self.send = send
        self.clients = clients
        self.results: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.started = time.monotonic()

    def _run(self) -> None:
        with httpx.Client(timeout=30, trust_env=False) as client:
            while not self._stop.is_set():
                try:
                    outcome = str(self.send(client).status_code)
                except httpx.TransportError as exc:
                    outcome = type(exc).__name__
                with self._lock:
                    self.results.append((time.monotonic() - self.started, outcome))

    @contextlib.contextmanager
    def running(self) -> Iterator[Load]:
        threads = [threading.Thread(target=self._run) for _ in range(self.clients)]
        self.started = time.monotonic()
        for thread in threads:
            thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            for thread in threads:
                thread.join()

    def report(self, since: float = 0.0) -> str:
        counts = collections.Counter(outcome for at, outcome in self.results if at >= since)
        return ", ".join(f"{outcome}: {n}" for outcome, n in sorted(counts.items()))

    def not_ok_window(self) -> tuple[float, float] | None:
        bad = [at for at, outcome in self.results if not outcome.startswith("2")]
        return (min(bad), max(bad)) if bad else None


# --- the drills -----------------------------------------------------------------


def drill_db_restart(work: Path) -> None:
    cluster = Cluster(work / "pg")
    cluster.ctl("start")
    try:
        cluster.createdb("attest")
        env = base_env(work, cluster.url("attest"))
        token = prepared_ledger(env)
        headers = {"Authorization": f"Bearer {token}"}
        with gunicorn(env) as (base, _):

            def recall(client: httpx.Client) -> httpx.Response:
                return client.post(f"{base}/v1/recall", json={"subject": "u1"}, headers=headers)

            load = Load(recall)
            with load.running():
                time.sleep(2)
                restart_at = time.monotonic() - load.started
                took = cluster.ctl("restart", "-m", "fast")
                time.sleep(3)
        window = load.not_ok_window()
        print(f"PostgreSQL restart (-m fast) took {took:.2f} s, from t={restart_at:.2f} s")
        print(f"  every answer: {load.report()}")
        if window:
            print(f"  not 2xx from t={window[0]:.2f} s to t={window[1]:.2f} s")
        print(f"  after the restart: {load.report(since=restart_at + took + 0.5)}")
    finally:
        cluster.ctl("stop", "-m", "immediate")


def drill_dead_worker(work: Path) -> None:
    env = base_env(work, f"sqlite:///{work / 'attest.sqlite3'}")
    prepared_ledger(env)
    with gunicorn(env) as (base, master):

        def sample(client: httpx.Client) -> httpx.Response:
            return client.get(f"{base}/v1/sample/quote")

        def workers() -> list[int]:
            listed = subprocess.run(
                ["pgrep", "-P", str(master.pid)], capture_output=True, text=True
            ).stdout
            return [int(pid) for pid in listed.split()]

        load = Load(sample)
        with load.running():
            time.sleep(2)
            victim = workers()[0]
            killed_at = time.monotonic() - load.started
            os.kill(victim, signal.SIGKILL)
            while len([pid for pid in workers() if pid != victim]) < 2:
                time.sleep(0.05)
            replaced = time.monotonic() - load.started - killed_at
            time.sleep(3)
    print(f"worker {victim} killed (SIGKILL) at t={killed_at:.2f} s; replaced in {replaced:.2f} s")
    print(f"  every answer: {load.report()}")
    window = load.not_ok_window()
    if window:
        print(f"  failed requests between t={window[0]:.2f} s and t={window[1]:.2f} s")


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)], check=True
    )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(disk: Path) -> Path:
    junk = disk / "junk"
    with junk.open("wb") as sink, contextlib.suppress(OSError):
        while True:
            sink.write(b"\0" * (1 << 16))
            sink.flush()
    return junk


def _disk_full_on(env: dict[str, str], disk: Path) -> None:
    token = prepared_ledger(env)
    headers = {"Authorization": f"Bearer {token}"}
    message = {"role": "user", "text": "I live in Dublin.", "occurred_at": "2026-01-01T00:00:00Z"}
    with gunicorn(env) as (base, _), httpx.Client(timeout=30) as client:

        def probe(label: str) -> None:
            answers = {
                "healthz": client.get(f"{base}/healthz"),
                "sample/page (no database)": client.get(f"{base}/v1/sample/page"),
                "recall (reads, audits)": client.post(
                    f"{base}/v1/recall", json={"subject": "u1"}, headers=headers
                ),
                "observations (writes)": client.post(
                    f"{base}/v1/observations",
                    json={"subject": "u1", "messages": [{**message, "id": f"m-{label}"}]},
                    headers=headers,
                ),
            }
            print(f"  {label}:")
            for name, response in answers.items():
                json_body = response.headers.get("content-type", "").startswith("application/json")
                code = response.json().get("error", {}).get("code", "") if json_body else ""
                retry = response.headers.get("Retry-After")
                print(
                    f"    {name}: {response.status_code} {code}"
                    + (f" (Retry-After {retry})" if retry else "")
                )

        probe("disk with room")
        junk = _fill(disk)
        # Pages and WAL segments already allocated still take a few rows: write until the
        # database itself runs out.
        statuses: collections.Counter[str] = collections.Counter()
        for n in range(2000):
            written = client.post(
                f"{base}/v1/observations",
                json={
                    "subject": "u1",
                    "messages": [
                        {**message, "id": f"fill-{n}", "text": "I live in Dublin. " * 500}
                    ],
                },
                headers=headers,
            )
            statuses[str(written.status_code)] += 1
            if written.status_code >= 300:
                break
        print(f"  writes after the disk filled: {dict(statuses)}")
        probe("disk full")
        junk.unlink()
        time.sleep(1)
        probe("room made again")


def drill_disk_full(work: Path) -> None:
    print("SQLite on a full disk")
    with small_disk(work / "disk", 32) as disk:
        _disk_full_on(base_env(work, f"sqlite:///{disk / 'attest.sqlite3'}"), disk)
    print("PostgreSQL on a full disk")
    with small_disk(work / "pgdisk", 160) as disk:
        cluster = Cluster(disk / "cluster")
        cluster.ctl("start")
        try:
            cluster.createdb("attest")
            _disk_full_on(base_env(work, cluster.url("attest")), disk)
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                cluster.ctl("stop", "-m", "immediate")


DRILLS = {
    "db-restart": drill_db_restart,
    "dead-worker": drill_dead_worker,
    "disk-full": drill_disk_full,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drill", choices=[*DRILLS, "all"])
    wanted = parser.parse_args().drill
    for name, drill in DRILLS.items():
        if wanted in (name, "all"):
            print(f"== {name}", flush=True)
            with tempfile.TemporaryDirectory(prefix=f"attest-drill-{name}-") as work:
                os.chmod(work, 0o755)
                drill(Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
