"""100 clients recording conflicting values of one declared one-valued predicate at once."""

from __future__ import annotations

import pytest
from django.db import connection

from citations.models import Fact, FactVersion
from citations.services import audit_chain_intact
from tests.citations.conftest import make_ledger
from tests.citations.test_concurrency import client_for, run_together

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 100
# Threads at once: the shared server's connection limit, not the ledger's, caps it.
THREADS = 10


def test_100_conflicting_client_records_leave_exactly_one_believed_value():
    ledger = make_ledger()
    assert (
        ledger.client.post(
            "/v1/predicates", {"name": "prefers_theme", "cardinality": "one"}, format="json"
        ).status_code
        == 201
    )
    messages = [
        {
            "id": f"m{n}",
            "role": "user",
            "text": f"Ça dépend — use theme-{n} from now on.",
            "occurred_at": "2026-03-04T10:00:00Z",
        }
        for n in range(WRITERS)
    ]
    response = ledger.client.post(
        "/v1/observations", {"subject": "u", "messages": messages}, format="json"
    )
    assert response.status_code in (200, 201), response.json()

    def record(n):
        body = {
            "subject": "u",
            "predicate": "prefers_theme",
            "value": f"theme-{n}",
            "evidence": [{"message_id": f"m{n}", "quote": f"theme-{n}"}],
            "extracted_by": f"worker-{n}",
        }
        return client_for(ledger).post("/v1/facts", body, format="json").status_code

    def writer(first):
        return lambda: [record(n) for n in range(first, WRITERS, THREADS)]

    statuses = run_together([writer(t) for t in range(THREADS)])
    assert sorted(s for batch in statuses for s in batch) == [201] * WRITERS
    assert connection.vendor == "postgresql"
    facts = Fact.objects.filter(predicate="prefers_theme")
    assert facts.count() == WRITERS
    believed = FactVersion.objects.filter(
        predicate="prefers_theme", known_until__isnull=True, valid_until__isnull=True
    )
    # Exactly one value holds now; each other one was closed by the one after it.
    assert believed.count() == 1
    assert (
        FactVersion.objects.filter(
            predicate="prefers_theme", known_until__isnull=True, status="current"
        ).count()
        == 1
    )
    assert audit_chain_intact(project=ledger.project)
