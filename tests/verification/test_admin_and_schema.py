"""Staff browse verifications read-only, failures filterable; the schema documents the route."""

from __future__ import annotations

import pytest

from verification.models import Verification

pytestmark = pytest.mark.django_db


def _record(**fields) -> Verification:
    values = {
        "route": "verify/quote",
        "request_id": "r1",
        "outcome": "answered",
        "status_code": 200,
        "mode": "fuzzy",
        "requested_url": "https://example.org/",
        "total_ms": 12.5,
    }
    values.update(fields)
    return Verification.objects.create(**values)


def test_failures_can_be_filtered_in_the_admin(admin_client):
    _record(request_id="ok-one", host="fine.example")
    _record(
        request_id="bad-one",
        outcome="refused",
        status_code=403,
        error_code="blocked",
        host="blocked.example",
    )
    response = admin_client.get("/admin/verification/verification/?failed=yes")
    assert response.status_code == 200
    assert b"blocked.example" in response.content
    assert b"fine.example" not in response.content


def test_the_admin_is_read_only(admin_client):
    record = _record()
    assert admin_client.get("/admin/verification/verification/add/").status_code == 403
    change = admin_client.post(
        f"/admin/verification/verification/{record.pk}/change/", {"route": "x"}
    )
    assert change.status_code == 403
    delete = admin_client.post(
        f"/admin/verification/verification/{record.pk}/delete/", {"post": "yes"}
    )
    assert delete.status_code == 403
    assert Verification.objects.get().route == "verify/quote"


def test_an_answered_record_cannot_carry_an_error_code():
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        _record(error_code="blocked")


def test_openapi_documents_verify_quote_and_every_error(api):
    schema = api.get("/v1/openapi.json").json()
    operation = schema["paths"]["/v1/verify/quote"]["post"]
    assert {"200", "400", "403", "422", "501"} <= set(operation["responses"])
    assert "/v1/sample/quote" in schema["paths"]
    assert "/v1/sample/page" in schema["paths"]


def test_openapi_lists_every_status_verify_quote_can_answer(api):
    # 415 is what a form-encoded or text body gets; 401/402/409/429/503 come from billing
    # (401: a Bearer credential that pays for no one).
    schema = api.get("/v1/openapi.json").json()
    responses = schema["paths"]["/v1/verify/quote"]["post"]["responses"]
    assert set(responses) == {
        "200",
        "400",
        "401",
        "402",
        "403",
        "409",
        "413",
        "415",
        "422",
        "429",
        "500",
        "501",
        "503",
    }
    assert "invalid_json" in responses["400"]["description"]


def test_a_form_encoded_verify_quote_body_is_415_as_documented(api):
    response = api.post("/v1/verify/quote", {"url": "http://127.0.0.1/", "quote": "a"})
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_durations_read_in_whole_milliseconds(admin_client):
    record = _record(fetch_ms=803.4567, extract_ms=None, match_ms=1.5, total_ms=1234.567)
    listed = admin_client.get("/admin/verification/verification/").content.decode()
    assert "1,235 ms" in listed and "1234.567" not in listed
    page = admin_client.get(f"/admin/verification/verification/{record.pk}/change/")
    html = page.content.decode()
    assert "803 ms" in html and "2 ms" in html and "1,235 ms" in html
    assert "803.4567" not in html and "1234.567" not in html


def test_milliseconds_rounds_and_marks_a_missing_duration():
    from attest.admin import milliseconds

    assert milliseconds(0.4) == "0 ms"
    assert milliseconds(12_345.5) == "12,346 ms"
    assert milliseconds(None) == "—"
