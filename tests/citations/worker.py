"""Run the real task worker (`manage.py db_worker --batch`) until the queue is empty.

On PostgreSQL it is a separate process on the test database, as in production; SQLite's
test database lives in this process's memory, so there the same command runs in process.
On PostgreSQL the tests that use it must commit (``uses_worker``); SQLite's flush after a
committing test would meet the audit log's delete trigger, and needs no commit here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

uses_worker = pytest.mark.django_db(transaction=connection.vendor == "postgresql")


def run_worker() -> None:
    if connection.vendor != "postgresql":
        call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
        return
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
    subprocess.run(
        [sys.executable, "manage.py", "db_worker", "--batch", "--interval", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )
