"""Every ledger response, success or error, is exactly what the OpenAPI schema documents."""

from __future__ import annotations

import pytest

from tests.citations.openapi import assert_matches_schema

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(api):
    return api.get("/v1/openapi.json").json()


def test_ingest_recall_and_resolve_responses_match_the_schema(ledger, schema):
    response = ledger.ingest(
        "u",
        ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"),
        ("m2", "I moved to Cork in May.", "2026-05-04T10:11:58Z"),
        ("m3", "I like tea.", "2026-05-05T10:11:58Z"),
    )
    assert response.status_code == 201
    assert_matches_schema(schema, "/v1/observations", "post", response)
    dublin = next(f["id"] for f in response.json()["facts"] if f["value"] == "Dublin")

    closed = ledger.resolve(dublin)
    assert closed.json()["superseded_by"] is not None
    assert_matches_schema(schema, "/v1/citations/resolve", "post", closed)

    recalled = ledger.recall("u")
    assert len(recalled.json()["facts"]) == 2
    assert_matches_schema(schema, "/v1/recall", "post", recalled)
    history = ledger.recall("u", as_of={"valid_at": "2026-04-01T00:00:00Z"})
    assert [f["value"] for f in history.json()["facts"]] == ["Dublin"]
    assert_matches_schema(schema, "/v1/recall", "post", history)


def test_a_paged_resolve_matches_the_schema(ledger, schema):
    for n in range(3):
        response = ledger.ingest("u", (f"m{n}", "I like tea.", f"2026-03-0{n + 1}T10:00:00Z"))
    fact_id = response.json()["facts"][0]["id"]
    first = ledger.resolve(fact_id, limit=2)
    assert "next" in first.json()
    assert_matches_schema(schema, "/v1/citations/resolve", "post", first)
    last = ledger.resolve(fact_id, limit=2, after=first.json()["next"])
    assert "next" not in last.json()
    assert_matches_schema(schema, "/v1/citations/resolve", "post", last)


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v1/citations/resolve", {"id": "not-a-uuid"}, 400),
        ("/v1/citations/resolve", {"id": "4b7f0c1e-2d9a-4e3b-8f61-0a5c9e2d7b14"}, 404),
        ("/v1/recall", {}, 400),
        ("/v1/observations", {"subject": "u", "messages": []}, 400),
    ],
)
def test_error_responses_match_the_schema(ledger, schema, path, body, status):
    response = ledger.client.post(path, body, format="json")
    assert response.status_code == status
    assert_matches_schema(schema, path, "post", response)


def test_the_check_refuses_a_field_the_schema_does_not_document(ledger, schema):
    response = ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    assert_matches_schema(schema, "/v1/observations", "post", response)
    response.json()["facts"][0]["confidence"] = 0.9  # the parsed body is cached: edit it
    with pytest.raises(AssertionError, match="confidence"):
        assert_matches_schema(schema, "/v1/observations", "post", response)


def test_authored_retracted_and_conflict_responses_match_the_schema(ledger, schema):
    authored = ledger.client.post(
        "/v1/facts",
        {"subject": "u", "predicate": "likes", "statement": "Likes tea.", "authored_by": "ana"},
        format="json",
    )
    assert authored.status_code == 201
    assert_matches_schema(schema, "/v1/facts", "post", authored)
    path = f"/v1/facts/{authored.json()['id']}/retract"
    body = {"reason": "no", "replacement": {"statement": "Likes coffee.", "value": "coffee"}}
    retracted = ledger.client.post(path, body, format="json")
    assert retracted.status_code == 200
    assert retracted.json()["retraction"]["replacement_id"]
    assert (
        retracted.json()["retraction"]["replacement"]
        == retracted.json()["retraction"]["replacement_id"]
    )
    assert_matches_schema(schema, "/v1/facts/{fact_id}/retract", "post", retracted)
    again = ledger.client.post(path, body, format="json")
    assert again.status_code == 409
    assert_matches_schema(schema, "/v1/facts/{fact_id}/retract", "post", again)


def test_the_schema_bounds_an_authored_record_s_evidence_as_the_server_does(ledger, schema):
    from citations.serializers import MAX_WEB_EVIDENCE

    evidence = schema["components"]["schemas"]["AuthoredFactInRequest"]["properties"]["evidence"]
    assert evidence["maxItems"] == MAX_WEB_EVIDENCE == 20
    body = {"subject": "u", "predicate": "likes", "statement": "Likes tea.", "authored_by": "ana"}
    over = ledger.client.post(
        "/v1/facts", {**body, "evidence": [{}] * (MAX_WEB_EVIDENCE + 1)}, format="json"
    )
    assert over.status_code == 400
    assert over.json()["error"]["details"]["field"] == "evidence"
