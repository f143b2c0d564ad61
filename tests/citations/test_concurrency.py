"""Concurrent writers on PostgreSQL: timelines stay whole, the audit chain stays linked."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from citations.models import AuditEvent, FactVersion, Observation
from citations.services import audit_chain_intact
from tests.citations.conftest import make_ledger

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_together(calls) -> list:
    results: list = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def worker(index, call):
        try:
            barrier.wait()
            results[index] = call()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def client_for(ledger) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {ledger.token}")
    return client


def test_concurrent_moves_for_one_subject_leave_one_current_place():
    ledger = make_ledger()
    cities = ["Dublin", "Cork", "Galway", "Sligo"]

    def ingest(n, city):
        body = {
            "subject": "u",
            "messages": [
                {
                    "id": f"m{n}",
                    "role": "user",
                    "text": f"I moved to {city} in {['January', 'March', 'May', 'July'][n]}.",
                    "occurred_at": f"2025-0{1 + 2 * n}-05T10:00:00Z",
                }
            ],
        }
        return lambda: client_for(ledger).post("/v1/observations", body, format="json").status_code

    statuses = run_together([ingest(n, city) for n, city in enumerate(cities)])
    assert statuses == [201] * 4
    believed = FactVersion.objects.filter(project=ledger.project, known_until__isnull=True)
    assert [v.fact.value for v in believed if v.valid_until is None] == ["Sligo"]
    assert believed.count() == 4


def test_the_same_message_sent_twice_at_once_is_stored_once():
    ledger = make_ledger()
    body = {
        "subject": "u",
        "messages": [
            {
                "id": "m1",
                "role": "user",
                "text": "I like tea.",
                "occurred_at": "2025-01-05T10:00:00Z",
            }
        ],
    }
    statuses = run_together(
        [lambda: client_for(ledger).post("/v1/observations", body, format="json").status_code] * 3
    )
    assert statuses == [201] * 3
    assert Observation.objects.filter(project=ledger.project).count() == 1


def test_concurrent_resolves_keep_the_audit_chain_linked():
    ledger = make_ledger()
    response = ledger.ingest("u", ("m1", "I like tea.", "2025-01-05T10:00:00Z"))
    fact_id = response.json()["facts"][0]["id"]

    def resolve_five():
        client = client_for(ledger)
        return [
            client.post("/v1/citations/resolve", {"id": fact_id}, format="json").status_code
            for _ in range(5)
        ]

    results = run_together([resolve_five] * 4)
    assert all(status == 200 for statuses in results for status in statuses)
    assert AuditEvent.objects.filter(project=ledger.project).count() == 21
    assert audit_chain_intact(project=ledger.project)


def test_resolve_reads_one_repeatable_read_snapshot():
    from citations.services import read_snapshot

    with read_snapshot(), connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        isolation = cursor.fetchone()[0]
        cursor.execute("SHOW transaction_read_only")
        read_only = cursor.fetchone()[0]
    assert (isolation, read_only) == ("repeatable read", "on")


def test_resolve_outside_any_transaction_answers_and_is_audited():
    ledger = make_ledger()
    created = ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    fact_id = created.json()["facts"][0]["id"]
    response = ledger.resolve(fact_id)
    assert response.status_code == 200, response.content
    assert response.json()["evidence"][0]["quote"] == "I moved to Dublin in March"
    assert AuditEvent.objects.filter(operation="citation.resolve").count() == 1
    assert audit_chain_intact(project=ledger.project)


@pytest.mark.parametrize("round_", range(3))
def test_a_retraction_racing_a_supersession_holds_every_invariant(round_):
    from citations.models import Retraction

    ledger = make_ledger()
    ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2025-03-05T10:00:00Z"))
    cork = ledger.ingest("u", ("m2", "I moved to Cork in June.", "2025-06-05T10:00:00Z"))
    cork_id = next(f["id"] for f in cork.json()["facts"] if f["value"] == "Cork")
    galway = {
        "subject": "u",
        "messages": [
            {
                "id": "m3",
                "role": "user",
                "text": "I moved to Galway in September.",
                "occurred_at": "2025-09-05T10:00:00Z",
            }
        ],
    }

    def retract(reason):
        return lambda: (
            client_for(ledger)
            .post(f"/v1/facts/{cork_id}/retract", {"reason": reason}, format="json")
            .status_code
        )

    def supersede():
        return client_for(ledger).post("/v1/observations", galway, format="json").status_code

    statuses = run_together([retract("first"), supersede, retract("second")])
    assert sorted(statuses) == [200, 201, 409]
    # Whichever came first, the timeline is the one without Cork.
    believed = FactVersion.objects.filter(project=ledger.project, known_until__isnull=True)
    timeline = sorted(
        (v.fact.value, v.valid_from.month, v.valid_until and v.valid_until.month, v.status)
        for v in believed
    )
    assert timeline == [("Dublin", 3, 9, "validity_closed"), ("Galway", 9, None, "current")]
    dublin = next(v for v in believed if v.fact.value == "Dublin")
    assert dublin.superseded_by.value == "Galway"
    retraction = Retraction.objects.get(project=ledger.project)
    latest = FactVersion.objects.filter(fact_id=cork_id).order_by("-seq").first()
    assert (latest.status, latest.retraction_id) == ("retracted", retraction.pk)
    assert audit_chain_intact(project=ledger.project)
    assert AuditEvent.objects.filter(project=ledger.project, operation="fact.retract").count() == 2
