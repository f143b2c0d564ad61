"""Read replicas against a real streaming replica: the ledger's reads go to it once it has
replayed the project's last write, to the primary before (read-your-writes), and to the
primary when it lags or is down, with no error either way. The replica's own statistics
show which reads it served."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import httpx
import pytest
from django.db import connection

from tests.live_service import ROOT, gunicorn, server_env
from tests.ops.replica import StreamingReplica, replica_unavailable

# A replica and a server start in the first test's setup: more than the default 120 s when
# the machine is busy.
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(600),
]

MESSAGE = "I moved to Dublin in March."


@pytest.fixture(scope="module")
def replica(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        primary = connection.settings_dict
        why = replica_unavailable(primary)
        if why:
            pytest.skip(why)
        if not os.environ.get("CACHE_URL", "").startswith("redis"):
            pytest.skip("needs CACHE_URL=redis://... (replicas need a shared cache)")
        replica = StreamingReplica(dict(primary)).start()
    yield replica
    replica.remove()


@pytest.fixture(scope="module")
def service(replica, tmp_path_factory):
    primary = replica.primary
    name = primary["NAME"]
    env = server_env(
        DATABASE_URL=f"postgres://{primary['USER']}@127.0.0.1:{primary['PORT'] or 5432}/{name}",
        DATABASE_REPLICA_URLS=replica.url(name),
        ATTEST_REPLICA_MAX_LAG="2",
        CACHE_URL=os.environ["CACHE_URL"],
        SECRET_KEY=os.environ["SECRET_KEY"],
        ATTEST_VAR_DIR=str(tmp_path_factory.mktemp("replicas")),
    )
    with gunicorn(env, workers=2, threads=2) as base:
        yield base, env


def _project_token(env) -> str:
    made = subprocess.run(
        [sys.executable, "manage.py", "create_project", f"replicas-{secrets.token_hex(4)}"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return made.stdout.split()[-1]


def _ingest(base, token, message_id="m1", subject="user-1") -> str:
    answer = httpx.post(
        f"{base}/v1/observations",
        headers={"Authorization": f"Bearer {token}"},
        json={
            "subject": subject,
            "messages": [
                {
                    "id": message_id,
                    "role": "user",
                    "text": MESSAGE,
                    "occurred_at": "2026-03-04T10:11:58Z",
                }
            ],
        },
        timeout=60,
    )
    assert answer.status_code in (200, 201), answer.text
    return answer.json()["facts"][0]["id"]


def _resolve(base, token, fact_id) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/citations/resolve",
        headers={"Authorization": f"Bearer {token}"},
        json={"id": fact_id},
        timeout=60,
    )


def _replica_fact_reads(replica, table: str = "citations_fact") -> int:
    """Scans of a ledger table the replica itself has served (its own pg_stat)."""
    with replica.connect(replica.primary["NAME"]) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables "
            "WHERE relname = %s",
            (table,),
        ).fetchone()
    return int(row[0]) if row else 0


def _wait_for_reads(replica, above: int, timeout: float = 10, table: str = "citations_fact") -> int:
    """The replica's read count once it passed ``above`` (statistics are flushed lazily)."""
    deadline = time.monotonic() + timeout
    while True:
        reads = _replica_fact_reads(replica, table)
        if reads > above or time.monotonic() > deadline:
            return reads
        time.sleep(0.2)


def _pause_replay(replica, paused: bool) -> None:
    with replica.connect("postgres") as conn:
        conn.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


def test_a_write_reads_back_at_once_and_from_the_replica_once_replayed(replica, service):
    base, env = service
    token = _project_token(env)
    _pause_replay(replica, True)
    try:
        fact_id = _ingest(base, token)
        before = _replica_fact_reads(replica)
        # The replica has not replayed the write: the primary answers, at once.
        resolved = _resolve(base, token, fact_id)
        assert resolved.status_code == 200, resolved.text
        assert resolved.json()["id"] == fact_id
        time.sleep(1.5)  # past the statistics' flush interval
        assert _replica_fact_reads(replica) == before
    finally:
        _pause_replay(replica, False)
    replica.wait_caught_up()
    before = _replica_fact_reads(replica)
    resolved = _resolve(base, token, fact_id)
    assert resolved.status_code == 200, resolved.text
    assert resolved.json()["id"] == fact_id
    assert _wait_for_reads(replica, before) > before  # served by the replica this time


def test_a_replica_lagging_past_the_limit_is_skipped(replica, service):
    base, env = service
    token = _project_token(env)
    fact_id = _ingest(base, token, subject="user-lag")
    replica.wait_caught_up()
    _pause_replay(replica, True)
    try:
        _ingest(base, _project_token(env), subject="elsewhere")  # the primary moves on
        time.sleep(3)  # past ATTEST_REPLICA_MAX_LAG=2 behind
        before = _replica_fact_reads(replica)
        resolved = _resolve(base, token, fact_id)
        assert resolved.status_code == 200, resolved.text
        time.sleep(1.5)
        assert _replica_fact_reads(replica) == before
    finally:
        _pause_replay(replica, False)
    replica.wait_caught_up()


def test_the_change_feed_and_the_subject_list_are_read_from_a_caught_up_replica(replica, service):
    base, env = service
    token = _project_token(env)
    _ingest(base, token)
    replica.wait_caught_up()
    headers = {"Authorization": f"Bearer {token}"}
    for path, table in (
        ("/v1/changes", "citations_factchange"),
        ("/v1/subjects", "citations_subject"),
    ):
        before = _replica_fact_reads(replica, table)
        if path == "/v1/changes":
            answer = httpx.post(base + path, json={}, headers=headers, timeout=60)
        else:
            answer = httpx.get(base + path, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        assert _wait_for_reads(replica, before, table=table) > before, path


def _export(base, token, subject) -> list[dict]:
    answer = httpx.get(
        f"{base}/v1/subjects/{subject}/export",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert lines[-1]["type"] == "end", lines[-1]  # the whole stream, not one cut short
    return lines


def test_the_subject_export_reads_the_primary_until_replayed_then_the_replica(replica, service):
    base, env = service
    token = _project_token(env)
    # Messages are read by the export alone among the routes here: the replica's scans of
    # their table are the export's.
    table = "citations_observation"
    _pause_replay(replica, True)
    try:
        fact_id = _ingest(base, token, subject="user-export")
        before = _replica_fact_reads(replica, table)
        lines = _export(base, token, "user-export")
        assert [line["id"] for line in lines if line["type"] == "fact"] == [fact_id]
        time.sleep(1.5)  # past the statistics' flush interval
        assert _replica_fact_reads(replica, table) == before  # the primary served it
    finally:
        _pause_replay(replica, False)
    replica.wait_caught_up()
    before = _replica_fact_reads(replica, table)
    lines = _export(base, token, "user-export")
    assert [line["id"] for line in lines if line["type"] == "fact"] == [fact_id]
    assert [line["text"] for line in lines if line["type"] == "observation"] == [MESSAGE]
    assert _wait_for_reads(replica, before, table=table) > before  # the replica served it


def test_a_stopped_replica_moves_reads_to_the_primary_without_an_error(replica, service):
    base, env = service
    token = _project_token(env)
    fact_id = _ingest(base, token, subject="user-down")
    replica.wait_caught_up()
    assert _resolve(base, token, fact_id).status_code == 200
    replica.stop()
    answers = [_resolve(base, token, fact_id) for _ in range(6)]
    assert [a.status_code for a in answers] == [200] * 6
    recall = httpx.post(
        f"{base}/v1/recall",
        headers={"Authorization": f"Bearer {token}"},
        json={"subject": "user-down"},
        timeout=60,
    )
    assert recall.status_code == 200
    assert [f["id"] for f in recall.json()["facts"]] == [fact_id]
