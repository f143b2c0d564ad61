"""Start and stop real Attest servers (gunicorn subprocesses) for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def service_env(**settings: str) -> dict[str, str]:
    """The environment of a server: ours, less anything that would point it elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CACHE_URL"}}
    # Never the real Crossref: DOI lookups off unless ``settings`` name a loopback server.
    env.update(
        {"LOG_LEVEL": "WARNING", "ATTEST_TRUSTED_PROXIES": "", "ATTEST_CROSSREF_URL": ""},
        **settings,
    )
    return env


@contextlib.contextmanager
def gunicorn(
    env: dict[str, str], port: int, *, workers: int = 1, threads: int = 8
) -> Iterator[str]:
    """Serve Attest on 127.0.0.1:port until the block ends; yields the base URL."""
    binary = Path(sys.executable).with_name("gunicorn")
    # A log file, not a pipe: a pipe nobody reads would fill up and stall the server.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [
                str(binary),
                "attest.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--timeout",
                "120",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=1, trust_env=False).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"gunicorn on {port} did not start: {log.read()[-2000:]!r}")
                time.sleep(0.2)
            yield base
        finally:
            process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
