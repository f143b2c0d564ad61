"""Erasure on the embedded default (SQLite): the erased text leaves the database's files.

Run in a fresh interpreter on a database file of its own (the suite's SQLite test database
lives in memory): migrate, store a message, copy the files, erase it, copy them again, then
search the bytes of the database file and its WAL. The second copy is taken while the
service's connection is open: closing the last connection would checkpoint on its own.
"""

from __future__ import annotations

from pathlib import Path

from tests.django_script import run_django_script

SECRET = "Quexlingtonshire"

SCRIPT = f"""
import shutil, sys
import django
django.setup()
from django.core.management import call_command
from django.db import connection
from django.test.utils import setup_test_environment
setup_test_environment()
call_command("migrate", verbosity=0)
from tests.citations.conftest import make_ledger
ledger = make_ledger()
message = ("m1", "I live in {SECRET}. My dog is called Bramblefoot.", "2026-03-04T10:00:00Z")
assert ledger.ingest("u", message).status_code == 201
assert ledger.ingest("u", ("m2", "I like tea.", "2026-03-05T10:00:00Z")).status_code == 201
# A connection whose SQLite build leaves secure_delete off (this machine's may turn it on
# by default), given the pragmas every connection of the service gets:
import sqlite3
plain = sqlite3.connect(":memory:")
plain.execute("PRAGMA secure_delete=OFF")
for command in connection.init_commands:
    if command.strip():
        plain.execute(command)
print("secure_delete", plain.execute("PRAGMA secure_delete").fetchone()[0])
with connection.cursor() as cursor:
    # As SQLite's own checkpoints do once the WAL has grown: the text is in the main file.
    cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
def copy(to):
    for suffix in ("", "-wal"):
        shutil.copy(sys.argv[1] + suffix, to + suffix)
copy(sys.argv[2])
erased = ledger.client.post("/v1/erasures", {{"subject": "u", "message_id": "m1"}}, format="json")
assert erased.status_code == 200, erased.content
copy(sys.argv[3])  # while the connection is open: closing the last one checkpoints anyway
"""


def _holding(path: Path) -> list[str]:
    """Which of the database's files hold the secret's bytes."""
    files = [path, path.with_name(path.name + "-wal")]
    return [f.name for f in files if f.exists() and SECRET.encode() in f.read_bytes()]


def test_an_erased_message_leaves_no_bytes_in_the_sqlite_files(tmp_path, monkeypatch):
    database = tmp_path / "erase.sqlite3"
    before, after = tmp_path / "before.sqlite3", tmp_path / "after.sqlite3"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("CACHE_URL", "locmemcache://erase")
    out = run_django_script(SCRIPT, str(database), str(before), str(after))
    assert "secure_delete 1" in out
    assert _holding(before)  # the search finds the text while it is stored
    assert _holding(after) == []
