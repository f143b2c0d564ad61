"""Start Attest as a real server process for a test, with an environment of its own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
# Settings the suite may run under that a test's own server must not inherit.
_SUITE_SETTINGS = ("DATABASE_URL", "CACHE_URL", "SECRET_KEY", "ATTEST_", "LOG_")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A test server never reaches the real Crossref: DOI lookups are off unless a test
# points them at its own loopback server.
OFFLINE = {"ATTEST_CROSSREF_URL": ""}


def server_env(**settings: str) -> dict[str, str]:
    """This process's environment without the suite's settings, plus ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SUITE_SETTINGS)}
    env.update(OFFLINE, **settings)
    return env


@contextmanager
def serving(command: list[str], *, port: int, env: dict[str, str], log: Path) -> Iterator[str]:
    """Run ``command`` (which serves on ``port``) until it answers HTTP; yield its base URL."""
    with log.open("wb") as sink:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=5)
                break
            except httpx.TransportError as exc:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"the server did not start: {log.read_text()}") from exc
                time.sleep(0.2)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
