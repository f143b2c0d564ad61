"""Start Attest as real server processes for tests and benchmarks: the one helper for it.

- ``free_port()``: a port the system says is free (port 0), never a fixed one;
- ``server_env(**settings)``: this process's environment without the suite's own
  settings, plus ``settings``; DOI lookups off unless a test names its own Crossref;
- ``shared_database(tmp_dir)``: the database a server process can share with the test;
- ``gunicorn_command(port, ...)``: gunicorn serving ``attest.wsgi`` on loopback;
- ``serving(command, ...)``: run a command until it answers /healthz, stop it after;
- ``gunicorn(env, ...)``: ``serving`` for gunicorn on a free port.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
# Settings the suite may run under that a test's own server must not inherit.
_SUITE_SETTINGS = ("DATABASE_URL", "CACHE_URL", "SECRET_KEY", "ATTEST_", "LOG_")
# Every test server's defaults: quiet logs, no trusted proxy, and never the real
# Crossref (DOI lookups off unless a test points them at its own loopback server).
SERVER_DEFAULTS = {
    "LOG_LEVEL": "WARNING",
    "ATTEST_TRUSTED_PROXIES": "",
    "ATTEST_CROSSREF_URL": "",
}
STARTUP_SECONDS = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(**settings: str) -> dict[str, str]:
    """This process's environment without the suite's settings, the servers' defaults,
    then ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SUITE_SETTINGS)}
    env.update(SERVER_DEFAULTS, **settings)
    return env


def shared_database(tmp_dir: Path) -> tuple[str, bool]:
    """The DATABASE_URL a server process should use, and whether it must be migrated first.

    On PostgreSQL the server shares the test database (tests using it are transactional,
    so what the server writes is flushed after each). An in-memory SQLite test database
    cannot be shared with another process: the server gets a file of its own.
    """
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        host = db["HOST"] or "127.0.0.1"
        return f"postgres://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}", False
    return f"sqlite:///{tmp_dir / 'server.sqlite3'}", True


def migrate(env: dict[str, str]) -> None:
    """Create the tables of the database ``env`` names, as a new server's operator would."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )


@functools.cache
def _no_control_socket() -> tuple[str, ...]:
    """gunicorn 27 opens a control socket at one path per user; test servers need none."""
    help_text = subprocess.run(
        [str(GUNICORN), "--help"], capture_output=True, text=True, check=True
    ).stdout
    return ("--no-control-socket",) if "--no-control-socket" in help_text else ()


def gunicorn_command(
    port: int, *, workers: int = 1, threads: int = 8, extra: tuple[str, ...] | list[str] = ()
) -> list[str]:
    return [
        str(GUNICORN),
        "attest.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--timeout",
        "120",
        *_no_control_socket(),
        *extra,
    ]


def wait_answering(base: str, process: subprocess.Popen, log: Path, timeout: float) -> None:
    """Return once ``base`` answers /healthz at all (a test of an outage expects a 503);
    raise with the log if the process died or the time ran out first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(f"{base}/healthz", timeout=5, trust_env=False)
            return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server at {base} did not start: {log.read_text()[-4000:]}")
        time.sleep(0.1)


def stop(process: subprocess.Popen) -> None:
    """Stop a server started in its own session: its whole process group, then wait.

    SIGINT is gunicorn's quick shutdown: a test's server need not finish its requests.
    """
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def start(command: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start ``command`` in its own session, its output to ``log`` (a file: a pipe nobody
    reads would fill up and stall the server)."""
    with log.open("wb") as sink:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@contextmanager
def serving(command: list[str], *, port: int, env: dict[str, str], log: Path) -> Iterator[str]:
    """Run ``command`` (which serves on ``port``) until it answers HTTP; yield its base URL."""
    server = start(command, env=env, log=log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(base, server, log, STARTUP_SECONDS)
        yield base
    finally:
        stop(server)


@contextmanager
def gunicorn(
    env: dict[str, str], *, workers: int = 1, threads: int = 8, log: Path | None = None
) -> Iterator[str]:
    """Serve Attest with gunicorn on a free loopback port until the block ends; yields the
    base URL."""
    port = free_port()
    command = gunicorn_command(port, workers=workers, threads=threads)
    if log is not None:
        with serving(command, port=port, env=env, log=log) as base:
            yield base
        return
    with (
        tempfile.TemporaryDirectory() as logs,
        serving(command, port=port, env=env, log=Path(logs) / "gunicorn.log") as base,
    ):
        yield base
