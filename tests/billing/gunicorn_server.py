"""A real gunicorn serving Attest on loopback, started with ``make run``'s own limits.

Billing's crash tests kill its worker with SIGKILL mid-request; the master starts a new
one, as it would in production, and the test carries on against it. Starting, waiting
and stopping are ``tests.live_service``'s, as for every server a test starts.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import time
from pathlib import Path

from django.conf import settings

from tests.live_service import (
    ROOT,
    STARTUP_SECONDS,
    free_port,
    gunicorn_command,
    migrate,
    server_env,
    shared_database,
    start,
    stop,
    wait_answering,
)


def makefile_gunicorn_limits() -> list[str]:
    """The gunicorn limit flags ``make run`` passes, read from the Makefile itself."""
    text = (ROOT / "Makefile").read_text()
    return shlex.split(re.search(r"^GUNICORN_LIMITS\s*:?=\s*(.*)$", text, re.M).group(1))


def _suite_shared() -> dict[str, str]:
    """The suite's cache and secret key, which the server shares with the test."""
    return {name: os.environ[name] for name in ("CACHE_URL", "SECRET_KEY") if name in os.environ}


class GunicornServer:
    def __init__(self, tmp_dir: Path, *, env: dict[str, str], limits: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        db_url, needs_migrate = shared_database(tmp_dir)
        self.env = server_env(
            **_suite_shared(),
            DJANGO_SETTINGS_MODULE="tests.billing.server_settings",
            PYTHONPATH=str(ROOT),
            DATABASE_URL=db_url,
            ATTEST_VAR_DIR=str(tmp_dir),
            ATTEST_SIGNING_KEYS=settings.ATTEST_SIGNING_KEYS,
            **env,
        )
        if needs_migrate:
            migrate(self.env)
        self.log = tmp_dir / f"gunicorn-{self.port}.log"
        # Threads, so the test can read the ledger while a request holds the worker;
        # SIGKILL still takes every request of the worker down at once.
        command = gunicorn_command(self.port, workers=1, threads=4, extra=limits)
        self.process = start(command, env=self.env, log=self.log)
        self.wait_ready()

    def wait_ready(self, timeout: float = STARTUP_SECONDS) -> None:
        wait_answering(self.url, self.process, self.log, timeout)

    def worker_pid(self) -> int:
        master = self.process.pid
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])

    def kill_worker(self, timeout: float = STARTUP_SECONDS) -> None:
        """SIGKILL the worker (no cleanup runs), then wait up to ``timeout`` seconds in all
        for the master's new worker to answer."""
        pid = self.worker_pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            pids = children.read_text().split()
            if pids and int(pids[0]) != pid:
                break
            time.sleep(0.05)
        self.wait_ready(max(deadline - time.monotonic(), 0.0))

    def stop(self) -> None:
        stop(self.process)
