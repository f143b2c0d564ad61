"""Rebuild, erasure and export answers are what the published OpenAPI schema documents."""

from __future__ import annotations

import pytest

from tests.citations.openapi import assert_matches_schema

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(api):
    return api.get("/v1/openapi.json").json()


def test_rebuild_answers_match_the_schema(ledger, schema):
    ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    post = lambda body: ledger.client.post("/v1/rebuilds", body, format="json")  # noqa: E731

    source = post({"subject": "u", "message_id": "m1"})
    assert source.status_code == 201
    assert_matches_schema(schema, "/v1/rebuilds", "post", source)
    project = post({"scope": "project"})
    assert project.status_code == 202
    assert_matches_schema(schema, "/v1/rebuilds", "post", project)
    running = post({"scope": "project"})
    assert running.status_code == 409
    assert_matches_schema(schema, "/v1/rebuilds", "post", running)
    for response in (post({"subject": 1}), post({"subject": "u", "message_id": "zz"})):
        assert response.status_code in (400, 404)
        assert_matches_schema(schema, "/v1/rebuilds", "post", response)
    followed = ledger.client.get(f"/v1/rebuilds/{source.json()['generation']['id']}")
    assert followed.status_code == 200
    assert_matches_schema(schema, "/v1/rebuilds/{generation_id}", "get", followed)
    missing = ledger.client.get("/v1/rebuilds/999999")
    assert missing.status_code == 404
    assert_matches_schema(schema, "/v1/rebuilds/{generation_id}", "get", missing)


def test_erasure_answers_match_the_schema(ledger, schema):
    ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    for body, status in [
        ({"subject": "u", "message_id": "m1"}, 200),
        ({"subject": "u", "message_id": "m1"}, 404),
        ({"subject": ["u"]}, 400),
    ]:
        response = ledger.client.post("/v1/erasures", body, format="json")
        assert response.status_code == status
        assert_matches_schema(schema, "/v1/erasures", "post", response)


def test_the_export_is_documented_as_ndjson(ledger, schema):
    operation = schema["paths"]["/v1/subjects/{subject}/export"]["get"]
    assert list(operation["responses"]["200"]["content"]) == ["application/x-ndjson"]
    missing = ledger.client.get("/v1/subjects/nobody/export")
    assert missing.status_code == 404
    assert_matches_schema(schema, "/v1/subjects/{subject}/export", "get", missing)
