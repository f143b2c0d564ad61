"""POST /v1/changes and GET /v1/subjects: what an agent reads to keep its memory in step."""

from __future__ import annotations

import json

import pytest

from citations.models import AuditEvent, FactChange

pytestmark = pytest.mark.django_db

AT = "2026-03-04T10:00:00Z"


def changes(ledger, **body) -> dict:
    response = ledger.client.post("/v1/changes", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def events(ledger, **body) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (c["type"], c["fact_id"], c["subject"], c["predicate"])
        for c in changes(ledger, **body)["changes"]
    ]


def fact_id(ledger, subject: str, predicate: str, value: str) -> str:
    facts = ledger.client.get(f"/v1/facts?subject={subject}&predicate={predicate}").json()
    return next(f["id"] for f in facts["facts"] if f["value"] == value)


def test_the_feed_lists_each_lifecycle_event_once_in_commit_order(ledger):
    ledger.ingest("u", ("m1", "I live in Berlin.", "2026-01-04T10:00:00Z"))
    berlin = fact_id(ledger, "u", "lives_in", "Berlin")
    ledger.ingest("u", ("m2", "I moved to Munich in March.", AT))
    munich = fact_id(ledger, "u", "lives_in", "Munich")
    ledger.ingest("u", ("m3", "I like green tea.", AT))
    tea = fact_id(ledger, "u", "likes", "green tea")
    retract = ledger.client.post(f"/v1/facts/{tea}/retract", {"reason": "joke"}, format="json")
    assert retract.status_code == 200
    rebuilt = ledger.client.post(
        "/v1/rebuilds", {"subject": "u", "message_id": "m2"}, format="json"
    )
    assert rebuilt.status_code == 201, rebuilt.content
    munich_again = fact_id(ledger, "u", "lives_in", "Munich")
    erased = ledger.client.post("/v1/erasures", {"subject": "u", "message_id": "m1"}, format="json")
    assert erased.status_code == 200, erased.content

    seen = events(ledger)
    # Berlin's message is erased last: its fact's rows then name no predicate.
    assert seen[:5] == [
        ("created", berlin, "u", None),
        ("created", munich, "u", "lives_in"),
        ("superseded", berlin, "u", None),
        ("created", tea, "u", "likes"),
        ("retracted", tea, "u", "likes"),
    ]
    erased_events = [e for e in seen if e[0] == "erased"]
    rebuild_events = seen[5 : -len(erased_events)]
    # The rebuild of m2 retires the facts it read (Munich, and Berlin whose supersession
    # it stated) and admits them again; each event once, and in that order.
    assert ("reinterpreted", berlin, "u", None) in rebuild_events
    assert ("reinterpreted", munich, "u", "lives_in") in rebuild_events
    assert ("created", munich_again, "u", "lives_in") in rebuild_events
    assert all(e[0] in ("reinterpreted", "created", "superseded") for e in rebuild_events)
    assert len(seen) == len(set(seen))
    # Erasing m1 erases every fact it alone supported (both Berlins): listed last, once
    # each, the facts' IDs kept (they answer 404 like unknown ones) but not their
    # predicate, and no change carries a statement or a value.
    assert berlin in {e[1] for e in erased_events} and len(erased_events) == 2
    assert all(e[3] is None for e in erased_events)
    for _, erased_id, _, _ in erased_events:
        assert ledger.resolve(erased_id).status_code == 404
    text = json.dumps(changes(ledger))
    assert "Berlin" not in text and "Munich" not in text and "tea" not in text
    ids = [c["id"] for c in changes(ledger)["changes"]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(c["at"].endswith("Z") for c in changes(ledger)["changes"])


def test_paging_goes_on_from_the_last_change_and_sees_later_ones(ledger):
    ledger.ingest("u", *[(f"m{i}", f"I like thing {i}.", AT) for i in range(5)])
    first = changes(ledger, limit=3)
    assert len(first["changes"]) == 3 and "next" in first
    second = changes(ledger, limit=3, after=first["next"])
    assert len(second["changes"]) == 2
    # A feed has no last page: the cursor after the last change reads on later.
    caught_up = changes(ledger, limit=3, after=second["next"]["cursor"])
    assert caught_up == {"changes": []}
    ledger.ingest("u", ("m9", "I like thing 9.", AT))
    later = changes(ledger, limit=3, after=second["next"])
    assert [c["type"] for c in later["changes"]] == ["created"]
    assert later["changes"][0]["id"] > second["changes"][-1]["id"]
    assert changes(ledger, limit=3, after=later["next"]) == {"changes": []}


def test_one_subjects_feed_and_an_erased_subject_answer_like_an_unknown_one(ledger):
    ledger.ingest("a", ("m1", "I live in Oslo.", AT))
    ledger.ingest("b", ("m2", "I live in Bergen.", AT))
    assert [e[2] for e in events(ledger, subject="a")] == ["a"]
    assert ledger.client.post("/v1/erasures", {"subject": "a"}, format="json").status_code == 200
    assert events(ledger, subject="a") == events(ledger, subject="never-seen") == []
    project_wide = events(ledger)
    # The erased subject's changes name no one and no predicate; the erasure is listed.
    assert [(t, s, p) for t, _, s, p in project_wide if s != "b"] == [
        ("created", None, None),
        ("erased", None, None),
    ]
    assert "Oslo" not in json.dumps(changes(ledger))


def test_bad_requests_name_the_field(ledger):
    for body, field in [
        ({"limit": 201}, "limit"),
        ({"limit": 0}, "limit"),
        ({"after": "forged"}, "after"),
        ({"since": "x"}, "since"),
        ({"subject": 7}, "subject"),
    ]:
        response = ledger.client.post("/v1/changes", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["error"]["details"]["field"] == field
    # A cursor of one subject's feed does not page another's.
    ledger.ingest("a", *[(f"m{i}", f"I like thing {i}.", AT) for i in range(3)])
    page = changes(ledger, subject="a", limit=1)
    other = ledger.client.post("/v1/changes", {"after": page["next"]}, format="json")
    assert other.status_code == 400


def test_the_limit_defaults_to_50(ledger):
    ledger.ingest("u", *[(f"m{i}", f"I like thing {i}.", AT) for i in range(55)])
    assert len(changes(ledger)["changes"]) == 50


def test_reads_of_the_feed_and_the_subjects_are_audited_with_ids_only(ledger):
    ledger.ingest("u", ("m1", "I live in Oslo.", AT))
    feed = changes(ledger)
    ledger.client.get("/v1/subjects")
    event = AuditEvent.objects.get(operation="changes.list")
    assert event.object_ids == [feed["changes"][0]["fact_id"]]
    assert event.source_count == 1
    listed = AuditEvent.objects.get(operation="subjects.list")
    assert listed.source_count == 1 and "u" not in listed.object_ids


def test_subjects_list_counts_facts_and_the_latest_message(ledger):
    ledger.ingest(
        "b",
        ("m1", "I live in Oslo. I like tea.", "2026-01-04T10:00:00Z"),
        ("m2", "I like coffee.", "2026-02-04T10:00:00+01:00"),
    )
    ledger.ingest("a", ("m3", "I like jazz.", AT))
    ledger.ingest("gone", ("m4", "I like rain.", AT))
    assert ledger.client.post("/v1/erasures", {"subject": "gone"}, format="json").status_code == 200
    response = ledger.client.get("/v1/subjects")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "subjects": [
            {"subject": "a", "facts": 1, "last_observed_at": AT},
            {"subject": "b", "facts": 3, "last_observed_at": "2026-02-04T09:00:00Z"},
        ]
    }
    first = ledger.client.get("/v1/subjects?limit=1").json()
    assert [s["subject"] for s in first["subjects"]] == ["a"]
    second = ledger.client.get(f"/v1/subjects?limit=1&after={first['next']['cursor']}").json()
    assert [s["subject"] for s in second["subjects"]] == ["b"] and "next" not in second
    for query in ("limit=201", "limit=0", "after=forged", "subject=a", "limit=1&limit=2"):
        refused = ledger.client.get(f"/v1/subjects?{query}")
        assert refused.status_code == 400, query


def test_another_projects_credential_sees_no_subjects_or_changes(ledger, other_ledger):
    ledger.ingest("u", ("m1", "I live in Oslo.", AT))
    assert other_ledger.client.get("/v1/subjects").json() == {"subjects": []}
    assert events(other_ledger) == events(other_ledger, subject="u") == []
    # Nor can it page the project's feed with the project's cursor.
    ledger.ingest("u", ("m2", "I like tea.", AT))
    page = changes(ledger, limit=1)
    assert [c["fact_id"] for c in changes(other_ledger, after=page["next"])["changes"]] == []


def test_change_rows_hold_no_content_column():
    names = {field.name for field in FactChange._meta.get_fields()}
    assert names == {"id", "project", "seq", "type", "fact", "subject", "at"}
