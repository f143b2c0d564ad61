"""Erasure racing resolve and export on PostgreSQL: no partial content, exports consistent."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.citations.conftest import make_ledger
from tests.citations.scan import columns_holding

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "Quexlington"


def client_for(ledger) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {ledger.token}")
    return client


def in_thread(target) -> threading.Thread:
    def run():
        try:
            target()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def seeded():
    ledger = make_ledger()
    ledger.ingest(
        "u",
        ("m1", f"I live in {SECRET}.", "2026-03-04T10:00:00Z"),
        ("m2", f"I like {SECRET} tea.", "2026-03-05T10:00:00Z"),
        ("m3", "I work at Acme.", "2026-03-06T10:00:00Z"),
    )
    return ledger


def test_an_export_started_before_an_erasure_is_the_whole_snapshot_before_it():
    ledger = seeded()
    started, erased = threading.Event(), threading.Event()
    lines: list[dict] = []

    def export():
        response = client_for(ledger).get("/v1/subjects/u/export")
        chunks = iter(response.streaming_content)
        lines.append(json.loads(next(chunks)))
        started.set()
        assert erased.wait(30)
        lines.extend(json.loads(line) for chunk in chunks for line in chunk.splitlines())
        response.close()

    def erase():
        assert started.wait(30)
        response = client_for(ledger).post("/v1/erasures", {"subject": "u"}, format="json")
        assert response.status_code == 200
        erased.set()

    for thread in [in_thread(export), in_thread(erase)]:
        thread.join()

    kinds = [line["type"] for line in lines]
    assert kinds[0] == "subject" and kinds[-1] == "end"
    counts = lines[-1]["counts"]
    assert (counts["observation"], counts["fact"]) == (3, 3)
    assert counts == {kind: kinds.count(kind) for kind in counts}
    texts = [line["text"] for line in lines if line["type"] == "observation"]
    assert sum(SECRET in text for text in texts) == 2
    # After the erasure: nothing to export, and nothing left anywhere.
    assert client_for(ledger).get("/v1/subjects/u/export").status_code == 404
    assert columns_holding(SECRET) == []


def test_exports_racing_an_erasure_are_each_all_or_nothing():
    ledger = seeded()
    barrier = threading.Barrier(5)
    outcomes: list = []

    def export():
        barrier.wait()
        response = client_for(ledger).get("/v1/subjects/u/export")
        if response.status_code == 404:
            outcomes.append("gone")
            return
        body = b"".join(response.streaming_content).decode()
        response.close()
        lines = [json.loads(line) for line in body.splitlines()]
        outcomes.append(([line["type"] for line in lines], body.count(SECRET)))

    def erase():
        barrier.wait()
        response = client_for(ledger).post(
            "/v1/erasures", {"subject": "u", "message_id": "m1"}, format="json"
        )
        assert response.status_code == 200

    threads = [in_thread(export) for _ in range(4)] + [in_thread(erase)]
    for thread in threads:
        thread.join()

    assert len(outcomes) == 4
    for kinds, secrets in outcomes:
        assert kinds[0] == "subject" and kinds[-1] == "end"
        before = kinds.count("observation") == 3 and kinds.count("fact") == 3
        after = kinds.count("observation") == 2 and kinds.count("fact") == 2
        assert before or after, kinds
        # m1's text, its quote and its fact's statement and value, or none of them.
        assert secrets == (4 + 4 if before else 4), (kinds, secrets)


def test_resolves_racing_an_erasure_see_the_fact_whole_or_not_at_all():
    ledger = seeded()
    fact_id = next(
        f["id"] for f in ledger.recall("u").json()["facts"] if f["predicate"] == "lives_in"
    )
    barrier = threading.Barrier(6)
    outcomes: list = []

    def resolve():
        barrier.wait()
        for _ in range(5):
            response = client_for(ledger).post(
                "/v1/citations/resolve", {"id": fact_id}, format="json"
            )
            if response.status_code == 404:
                outcomes.append("gone")
                continue
            body = response.json()
            outcomes.append((body["statement"], [e["quote"] for e in body["evidence"]]))

    def erase():
        barrier.wait()
        response = client_for(ledger).post(
            "/v1/erasures", {"subject": "u", "message_id": "m1"}, format="json"
        )
        assert response.status_code == 200

    threads = [in_thread(resolve) for _ in range(5)] + [in_thread(erase)]
    for thread in threads:
        thread.join()

    assert len(outcomes) == 25
    for outcome in outcomes:
        if outcome != "gone":
            statement, quotes = outcome
            assert SECRET in statement and quotes and all(SECRET in q for q in quotes)
    assert outcomes[-1] == "gone" or "gone" in outcomes
    after = client_for(ledger).post("/v1/citations/resolve", {"id": fact_id}, format="json")
    assert after.status_code == 404
