"""The client's and the CLI's memory calls against a real Attest on loopback: ranked
recall, the change feed read on from its cursor, the subjects, declared synonyms."""

from __future__ import annotations

import json

import pytest

from attest_client import Attest
from attest_client import types as t
from tests.clients.test_cli import attest
from tests.clients.test_client import assert_shape

pytestmark = pytest.mark.timeout(600)


def test_ranked_recall_changes_and_subjects_through_the_client(service):
    with Attest(service.url, credential=service.credential) as client:
        declared = client.declare_predicate(
            "memory_seat", "one", description="Seat choice.", synonyms=["airplane", "aisle"]
        )
        assert_shape(declared, t.Predicate)
        assert declared["synonyms"] == ["airplane", "aisle"]
        client.ingest(
            "memclient-u",
            [
                {
                    "id": "memclient-m1",
                    "role": "user",
                    "text": "I'm allergic to peanuts. I live in Oslo.",
                    "occurred_at": "2026-03-04T10:00:00Z",
                }
            ],
        )
        ranked = client.recall("memclient-u", query="any allergies?")
        assert_shape(ranked, t.FactPage)
        assert_shape(ranked["facts"][0], t.Fact)
        assert ranked["facts"][0]["predicate"] == "allergic_to"
        first = client.changes(subject="memclient-u", limit=1)
        assert_shape(first, t.ChangePage)
        assert_shape(first["changes"][0], t.Change)
        rest = client.changes(subject="memclient-u", after=first["next"])
        assert [c["type"] for c in first["changes"] + rest["changes"]] == ["created", "created"]
        assert client.changes(subject="memclient-u", after=rest["next"]) == {"changes": []}
        subjects = client.subjects(limit=200)
        assert_shape(subjects, t.SubjectPage)
        mine = [s for s in subjects["subjects"] if s["subject"] == "memclient-u"]
        assert_shape(mine[0], t.Subject)
        assert mine[0]["facts"] == 2


def test_the_memory_commands(service, tmp_path):
    ledger = {"url": service.url, "ATTEST_CREDENTIAL": service.credential}
    messages = tmp_path / "messages.json"
    messages.write_text(
        json.dumps(
            {
                "subject": "memcli-u",
                "messages": [
                    {
                        "id": "memcli-m1",
                        "role": "user",
                        "text": "I work at Acme Robotics.",
                        "occurred_at": "2026-05-04T10:00:00Z",
                    }
                ],
            }
        )
    )
    assert attest("ingest", str(messages), **ledger).returncode == 0
    ranked = attest("recall", "memcli-u", "--query", "who is her employer?", **ledger)
    assert ranked.returncode == 0, ranked.stderr
    assert json.loads(ranked.stdout)["facts"][0]["predicate"] == "works_at"
    changed = json.loads(attest("changes", "--subject", "memcli-u", **ledger).stdout)
    assert [c["type"] for c in changed["changes"]] == ["created"]
    later = attest(
        "changes", "--subject", "memcli-u", "--after", changed["next"]["cursor"], **ledger
    )
    assert json.loads(later.stdout) == {"changes": []}
    listed = json.loads(attest("subjects", "--limit", "200", **ledger).stdout)
    assert "memcli-u" in [s["subject"] for s in listed["subjects"]]
