"""GET /v1/facts (record inventory) and recall paging, on the one cursor format of resolve."""

from __future__ import annotations

import pytest

from citations.models import AuditEvent
from tests.citations.openapi import assert_matches_schema

pytestmark = pytest.mark.django_db


def likes(ledger, subject, count, prefix="m"):
    ids = []
    for n in range(count):
        response = ledger.ingest(
            subject, (f"{prefix}{n}", f"I like thing{n}.", f"2026-03-{n + 1:02d}T10:00:00Z")
        )
        ids.append(response.json()["facts"][0]["id"])
    return ids


def walk(ledger, path, **params):
    seen, after, pages = [], None, 0
    while True:
        query = {**params, **({"after": after} if after else {})}
        response = ledger.client.get(path, query)
        assert response.status_code == 200, response.json()
        body = response.json()
        seen += [fact["id"] for fact in body["facts"]]
        pages += 1
        if "next" not in body:
            return seen, pages
        after = body["next"]["cursor"]


def test_inventory_lists_every_fact_newest_first_in_pages(ledger, api):
    ids = likes(ledger, "u", 5) + likes(ledger, "v", 2, prefix="n")
    seen, pages = walk(ledger, "/v1/facts", limit=2)
    assert seen == list(reversed(ids))
    assert pages == 4
    schema = api.get("/v1/openapi.json").json()
    assert_matches_schema(schema, "/v1/facts", "get", ledger.client.get("/v1/facts", {"limit": 2}))


def test_inventory_filters_by_subject_predicate_and_status(ledger):
    ids = likes(ledger, "u", 3)
    ledger.ingest("v", ("x1", "I live in Cork.", "2026-03-01T10:00:00Z"))
    ledger.client.post(f"/v1/facts/{ids[0]}/retract", {"reason": "no"}, format="json")
    assert walk(ledger, "/v1/facts", subject="u")[0] == list(reversed(ids))
    assert len(walk(ledger, "/v1/facts", predicate="lives_in")[0]) == 1
    assert walk(ledger, "/v1/facts", status="retracted")[0] == [ids[0]]
    assert walk(ledger, "/v1/facts", subject="nobody")[0] == []


def test_inventory_shows_one_projects_facts_only(ledger, other_ledger):
    likes(ledger, "u", 2)
    assert walk(other_ledger, "/v1/facts")[0] == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "5.0"}, "limit"),
        ({"status": "gone"}, "status"),
        ({"predicate": "owns"}, "predicate"),
        ({"subjet": "u"}, "subjet"),
        ({"after": "forged"}, "after"),
    ],
)
def test_inventory_refuses_bad_parameters_with_the_field(ledger, query, field):
    response = ledger.client.get("/v1/facts", query)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field


def test_a_cursor_only_pages_the_query_it_came_from(ledger):
    likes(ledger, "u", 3)
    cursor = ledger.client.get("/v1/facts", {"limit": 1}).json()["next"]["cursor"]
    other = ledger.client.get("/v1/facts", {"limit": 1, "subject": "u", "after": cursor})
    assert other.status_code == 400
    recall = ledger.recall("u", limit=1).json()["next"]
    assert ledger.client.get("/v1/facts", {"after": recall["cursor"]}).status_code == 400
    resolve = ledger.resolve(walk(ledger, "/v1/facts")[0][0], after=recall)
    assert resolve.status_code == 400


def test_recall_pages_with_next_and_after(ledger):
    ids = likes(ledger, "u", 5)
    ledger.ingest("u", ("c", "I live in Cork.", "2026-03-01T10:00:00Z"))
    seen, after = [], None
    while True:
        body = ledger.recall("u", limit=2, **({"after": after} if after else {})).json()
        seen += [fact["id"] for fact in body["facts"]]
        if "next" not in body:
            break
        assert set(body["next"]) == {"cursor"}
        after = body["next"]
    assert len(seen) == 6 and set(ids) <= set(seen)
    assert len(set(seen)) == 6
    bad = ledger.recall("u", limit=2, after={"cursor": "forged"})
    assert bad.status_code == 400
    assert bad.json()["error"]["details"]["field"] == "after"


def test_inventory_is_audited_with_the_ids_it_returned(ledger):
    ids = likes(ledger, "u", 2)
    ledger.client.get("/v1/facts")
    event = AuditEvent.objects.get(operation="facts.list")
    assert event.object_ids == list(reversed(ids))
    assert event.source_count == 2


@pytest.mark.parametrize("name", ["subject", "predicate", "status", "limit", "after"])
def test_an_empty_parameter_is_refused_not_read_as_absent(ledger, name):
    # The schema gives each parameter a value; DRF alone would skip "predicate=" silently.
    response = ledger.client.get(f"/v1/facts?{name}=")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == name


def test_the_schema_gives_the_inventory_limit_as_an_integer_with_its_range(api):
    operation = api.get("/v1/openapi.json").json()["paths"]["/v1/facts"]["get"]
    [limit] = [p for p in operation["parameters"] if p["name"] == "limit"]
    schema = limit["schema"]
    assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", 1, 200)
