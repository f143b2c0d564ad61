"""A real gunicorn serving Attest on loopback, started with ``make run``'s own limits.

Billing's crash tests kill its worker with SIGKILL mid-request; the master starts a new
one, as it would in production, and the test carries on against it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.db import connection

REPO = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
# The ports this project's own test servers use (see the team's brief): 8300-8399.
PORTS = range(8300, 8400)


def makefile_gunicorn_limits() -> list[str]:
    """The gunicorn limit flags ``make run`` passes, read from the Makefile itself."""
    text = (REPO / "Makefile").read_text()
    return shlex.split(re.search(r"^GUNICORN_LIMITS\s*:?=\s*(.*)$", text, re.M).group(1))


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 8300-8399")


def database_url(tmp_dir: Path) -> tuple[str, bool]:
    """The URL a server process should use, and whether it must be migrated first.

    On PostgreSQL the server shares the test database (tests using it are transactional,
    so what the server writes is flushed after each). An in-memory SQLite test database
    cannot be shared with another process: the server gets its own file.
    """
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        return f"postgres://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}", False
    return f"sqlite:///{tmp_dir / 'server.sqlite3'}", True


def _no_control_socket() -> list[str]:
    """gunicorn 27 opens a control socket at one path per user; test servers need none."""
    help_text = subprocess.run(
        [str(GUNICORN), "--help"], capture_output=True, text=True, check=True
    ).stdout
    return ["--no-control-socket"] if "--no-control-socket" in help_text else []


class GunicornServer:
    def __init__(self, tmp_dir: Path, *, env: dict[str, str], limits: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        db_url, migrate = database_url(tmp_dir)
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.billing.server_settings",
            "PYTHONPATH": str(REPO),
            "DATABASE_URL": db_url,
            "ATTEST_VAR_DIR": str(tmp_dir),
            "ATTEST_SIGNING_KEYS": settings.ATTEST_SIGNING_KEYS,
            "LOG_LEVEL": "WARNING",
            # Never the real Crossref: DOI lookups off unless ``env`` names a loopback one.
            "ATTEST_CROSSREF_URL": "",
            **env,
        }
        if migrate:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
                cwd=REPO,
                env=self.env,
                check=True,
                timeout=300,
            )
        self.log = (tmp_dir / f"gunicorn-{self.port}.log").open("wb")
        self.process = subprocess.Popen(
            [
                str(GUNICORN),
                "attest.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                # Threads, so the test can read the ledger while a request holds the worker;
                # SIGKILL still takes every request of the worker down at once.
                "--threads",
                "4",
                "--timeout",
                "120",
                *_no_control_socket(),
                *limits,
            ],
            cwd=REPO,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "gunicorn exited; see its log"
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError("gunicorn did not answer /healthz")

    def worker_pid(self) -> int:
        master = self.process.pid
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])

    def kill_worker(self) -> None:
        """SIGKILL the worker (no cleanup runs), then wait for the master's new worker."""
        pid = self.worker_pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            pids = children.read_text().split()
            if pids and int(pids[0]) != pid:
                break
            time.sleep(0.05)
        self.wait_ready()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        self.log.close()
