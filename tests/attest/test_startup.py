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


TABLES_SCRIPT = """
import sys
import attest_core.normalise as n
before = n._tables.cache_info().currsize
if sys.argv[1] == "wsgi":
    import attest.wsgi
print(before, n._tables.cache_info().currsize)
"""


def _tables_built(how: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "attest.settings"}
    done = subprocess.run(
        [sys.executable, "-c", TABLES_SCRIPT, how],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_the_normaliser_s_tables_are_built_by_the_server_not_by_an_import():
    """Importing the normaliser (as every manage.py command does) builds nothing; the WSGI
    app builds its tables before the first request, in gunicorn's preloaded master."""
    assert _tables_built("import") == ["0", "0"]
    assert _tables_built("wsgi") == ["0", "1"]
