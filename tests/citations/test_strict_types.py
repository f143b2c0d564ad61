"""Every ledger route takes JSON types as sent: a number is not text, "5" is not a number."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

MESSAGE = {"id": "m1", "role": "user", "text": "I like tea.", "occurred_at": "2026-03-04T10:00:00Z"}


def message(**changes):
    return {"subject": "u", "messages": [{**MESSAGE, **changes}]}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/observations", {**message(), "subject": 123}, "subject"),
        ("/v1/observations", message(id=5), "messages[0].id"),
        ("/v1/observations", message(text=12.5), "messages[0].text"),
        ("/v1/observations", message(text=["I like tea."]), "messages[0].text"),
        ("/v1/observations", message(role=1), "messages[0].role"),
        ("/v1/observations", message(session=7), "messages[0].session"),
        ("/v1/observations", message(ordinal="3"), "messages[0].ordinal"),
        ("/v1/observations", message(ordinal=3.0), "messages[0].ordinal"),
        ("/v1/observations", message(ordinal=True), "messages[0].ordinal"),
        ("/v1/observations", message(occurred_at=1772618400), "messages[0].occurred_at"),
        ("/v1/recall", {"subject": 123}, "subject"),
        ("/v1/recall", {"subject": "u", "query": 0}, "query"),
        ("/v1/recall", {"subject": "u", "predicate": 1}, "predicate"),
        ("/v1/recall", {"subject": "u", "limit": "5"}, "limit"),
        ("/v1/recall", {"subject": "u", "limit": 5.5}, "limit"),
        ("/v1/recall", {"subject": "u", "as_of": "2026-03-04T10:00:00Z"}, "as_of"),
        ("/v1/citations/resolve", {"id": 123}, "id"),
        (
            "/v1/citations/resolve",
            {"id": "4b7f0c1e-2d9a-4e3b-8f61-0a5c9e2d7b14", "limit": "8"},
            "limit",
        ),
    ],
)
def test_a_value_of_the_wrong_json_type_is_refused_with_its_field(ledger, path, body, field):
    response = ledger.client.post(path, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["details"]["field"] == field
    expected = "invalid_citation" if path == "/v1/citations/resolve" else "invalid_request"
    assert response.json()["error"]["code"] == expected


def test_the_same_values_as_json_strings_and_numbers_are_accepted(ledger):
    response = ledger.client.post(
        "/v1/observations", message(ordinal=3, session="s1"), format="json"
    )
    assert response.status_code == 201
    assert response.json()["observations"][0]["ordinal"] == 3
    recalled = ledger.recall("u", query="tea", limit=5)
    assert [fact["value"] for fact in recalled.json()["facts"]] == ["tea"]
