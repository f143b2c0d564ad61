"""A Python snippet run in a fresh interpreter with the project's settings, from the
repository's root: for what a process's start-up imports, builds or leaves behind, which
the test process itself (Django long set up) cannot show."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_django_script(script: str, *argv: str) -> str:
    """What ``script`` printed, run as ``python -c script *argv``; it must exit 0."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "attest.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script, *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
