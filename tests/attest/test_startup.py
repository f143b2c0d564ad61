"""What loading the app costs and leaves behind: `make run` forks gunicorn's workers from a
master that loaded attest.wsgi (--preload), which is only safe while the load opens no
connection and starts no thread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

LOADED_SCRIPT = """
import threading
import attest.wsgi
from django.db import connections
print(sum(c.connection is not None for c in connections.all()), threading.active_count())
"""


def test_loading_the_wsgi_app_opens_no_connection_and_starts_no_thread():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "attest.settings"}
    done = subprocess.run(
        [sys.executable, "-c", LOADED_SCRIPT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "1"]


def test_make_run_forks_its_workers_from_a_preloaded_master():
    makefile = (REPO / "Makefile").read_text()
    [serve] = [line for line in makefile.splitlines() if "gunicorn attest.wsgi" in line]
    assert "--preload" in serve
