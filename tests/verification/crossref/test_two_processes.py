"""Two real server processes share one Crossref pace: one request in flight, one trial budget.

On PostgreSQL + Redis the processes use the test database and the Redis lock; on
SQLite they share a database file and its lease row (each has its own
local-memory cache), which is the embedded setup's fallback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.live_service import ROOT, migrate, server_env, shared_database

# Each process gets ready, waits for the go file so both ask at the same moment,
# then looks its DOIs up as a batch would and prints the outcomes.
WORKER = """
import json, os, sys, time
import django
django.setup()
from verification.crossref.lookups import crossref_for_pages
print("ready", flush=True)
go = sys.argv[1]
while not os.path.exists(go):
    time.sleep(0.01)
outcomes = crossref_for_pages(sys.argv[2:], tier="trial", deadline_seconds=30)
print(json.dumps([o.as_json() for o in outcomes.values()]), flush=True)
"""


def _environment(tmp_path: Path, crossref_url: str) -> dict[str, str]:
    db_url, needs_migrate = shared_database(tmp_path)
    env = server_env(
        DJANGO_SETTINGS_MODULE="attest.settings",
        SECRET_KEY="two-processes-test",
        ATTEST_VAR_DIR=str(tmp_path),
        ATTEST_CROSSREF_URL=crossref_url,
        ATTEST_CROSSREF_MAILTO="ops@attest.example",
        DATABASE_URL=db_url,
    )
    if connection.vendor == "postgresql":
        env["CACHE_URL"] = os.environ["CACHE_URL"]
        assert settings.CACHES["default"]["BACKEND"] == "django_redis.cache.RedisCache"
    else:
        # Each process has its own local-memory cache: the lease row is the shared lock.
        env["CACHE_URL"] = "locmemcache://per-process"
    if needs_migrate:
        migrate(env)
    return env


@pytest.mark.django_db(transaction=True)
def test_two_processes_make_one_request_at_a_time_from_one_trial_budget(crossref, tmp_path):
    crossref.generated_prefix = "10.5555/bulk."
    crossref.delay = 0.2  # long enough that two requests at once would overlap
    env = _environment(tmp_path, crossref.url)
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go)]
            + [f"10.5555/bulk.{name}.{i}" for i in range(5)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready", worker.stderr.read()
        go.touch()
        results = [worker.communicate(timeout=90) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    blocks = []
    for worker, (out, err) in zip(workers, results, strict=True):
        assert worker.returncode == 0, err
        blocks += json.loads(out)
    statuses = sorted((b["status"], b["reason"]) for b in blocks)
    # Six trial lookups a minute across both processes, not six each.
    assert statuses == [("found", None)] * 6 + [("skipped", "rate_limited")] * 4, blocks
    assert crossref.most_in_flight == 1, [(s.path, s.started, s.ended) for s in crossref.seen]
    assert len([s for s in crossref.seen if s.path.startswith("/works/")]) == 6
