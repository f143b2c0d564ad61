"""The SQL statements of one ingest, pinned so they cannot creep back (a count, never a time).

Counted through the whole API. On PostgreSQL a one-message ingest into a subject with a
history is: the credential lookup; BEGIN; the subject's row lock; the generation and the
subject's latest known time; the message's insert (a stored ID is skipped by the insert
and only then read); the believed versions the statement can touch; the new fact, its
version and its evidence (and the known intervals that close) in one round trip; the
audit append with its project lock in one round trip; COMMIT. A hundred messages cost the
same statements. Inside the test's transaction BEGIN and COMMIT are a savepoint and its
release (the same count); the rate limit's counter, a table only when no cache is
configured (Redis in production), is left out.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from citations.models import AuditEvent, Evidence, FactChange, FactVersion, Observation
from citations.services import audit_chain_intact
from tests.citations.conftest import make_ledger

pytestmark = pytest.mark.django_db(transaction=False)

POSTGRESQL = [
    "credential",
    "BEGIN",
    "subject lock",
    "generation and known time",
    "observations",
    "believed versions",
    "facts, versions, evidence",
    "audit",
    "COMMIT",
]
# SQLite runs each write on its own (its statements cost no round trip), and its audit
# append reads the chain's head before writing the event.
SQLITE = [
    "credential",
    "BEGIN",
    "subject lock",
    "generation and known time",
    "observations",
    "believed versions",
    "fact",
    "version",
    "evidence",
    "audit project lock",
    "audit head",
    "audit event",
    "COMMIT",
]
# A new home also reads the sources of the homes it is placed among; on SQLite closing the
# superseded version's known interval is a statement of its own.
SUPERSESSION = ["sources of the believed homes"]
SUPERSESSION_SQLITE = [*SUPERSESSION, "close superseded version"]


def _messages(subject: str, first: int, count: int) -> list[tuple[str, str, str]]:
    """Likes, and every fifth message a new home that supersedes the last."""
    messages = []
    for n in range(first, first + count):
        text = f"I like hobby number {n}."
        if n % 5 == 4:
            text += f" I live in {['Dublin', 'Cork', 'Oslo'][n % 3]} now."
        messages.append((f"{subject}-{n}", text, f"2026-03-04T10:{n // 60:02d}:{n % 60:02d}Z"))
    return messages


def _statements(ledger, subject: str, messages) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = ledger.ingest(subject, *messages)
    assert response.status_code == 201, response.content
    return [
        query["sql"] for query in queries.captured_queries if "attest_ratecount" not in query["sql"]
    ]


def _expected(extra: tuple[list[str], list[str]] = ([], [])) -> list[str]:
    if connection.vendor == "postgresql":
        return POSTGRESQL + extra[0]
    return SQLITE + extra[1]


def test_a_one_message_ingest_takes_the_pinned_number_of_statements():
    ledger = make_ledger()
    assert ledger.ingest("u", *_messages("u", 0, 20)).status_code == 201  # a history
    statements = _statements(ledger, "u", _messages("u", 20, 1))
    assert len(statements) == len(_expected()), statements
    assert statements[1].startswith("SAVEPOINT") and statements[-1].startswith("RELEASE")
    assert Observation.objects.filter(project=ledger.project).count() == 21
    assert audit_chain_intact(project=ledger.project)


def test_a_superseding_message_takes_the_same_statements_and_writes_every_row():
    ledger = make_ledger()
    assert ledger.ingest("u", *_messages("u", 0, 20)).status_code == 201
    before = FactChange.objects.filter(project=ledger.project).count()
    statements = _statements(ledger, "u", _messages("u", 24, 1))  # a like and a new home
    assert len(statements) == len(_expected((SUPERSESSION, SUPERSESSION_SQLITE))), statements
    homes = FactVersion.objects.filter(
        project=ledger.project, predicate="lives_in", known_until__isnull=True
    )
    # Five homes believed, the new one current and the one before closed where it starts.
    assert homes.count() == 5
    assert [v.fact.value for v in homes.filter(valid_until__isnull=True)] == ["Dublin"]
    assert Evidence.objects.filter(fact__value="Dublin", known_until__isnull=True).count() == 2
    # The change feed numbers both new facts and the closed home (the triggers still run).
    assert FactChange.objects.filter(project=ledger.project).count() == before + 3


def test_a_hundred_messages_take_the_statements_of_one():
    ledger = make_ledger()
    assert ledger.ingest("u", *_messages("u", 0, 20)).status_code == 201
    one = _statements(ledger, "u", _messages("u", 24, 1))
    hundred = _statements(ledger, "u", _messages("u", 100, 100))
    # SQLite splits a bulk insert at its parameter limit (999): a few more, never one a message.
    assert len(hundred) == len(one) if connection.vendor == "postgresql" else len(hundred) < 30
    assert Observation.objects.filter(project=ledger.project).count() == 121
    assert AuditEvent.objects.filter(project=ledger.project).count() == 3


def test_a_replayed_message_is_read_back_not_stored_again():
    ledger = make_ledger()
    messages = _messages("u", 0, 3)
    first = ledger.ingest("u", *messages).json()
    statements = _statements(ledger, "u", messages)
    again = ledger.ingest("u", *messages).json()
    assert [o["id"] for o in again["observations"]] == [o["id"] for o in first["observations"]]
    assert again["facts"] == []
    # The insert skips the stored IDs; one read then finds them; nothing is placed.
    assert any("ON CONFLICT" in sql for sql in statements)
    assert Observation.objects.filter(project=ledger.project).count() == 3
