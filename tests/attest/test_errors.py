"""Every error class leaves the API in the one envelope."""

from __future__ import annotations

import io
import logging

import pytest

from attest.logs import RequestIDFilter

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.attest.error_urls")]


def envelope(response) -> dict:
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"]
    return body["error"]


def test_validation_error_names_nested_field_path(api):
    payload = {
        "citations": [
            {"url": "https://a.example/", "quote": "ok"},
            {"url": "https://a.example/", "quote": "ok"},
            {"url": "https://a.example/", "quote": "far too long a quote"},
        ]
    }
    response = api.post("/validate", payload, format="json")
    assert response.status_code == 400
    error = envelope(response)
    assert error["code"] == "invalid_request"
    assert error["details"]["field"] == "citations[2].quote"
    assert error["details"]["errors"][0]["field"] == "citations[2].quote"


def test_validation_error_lists_every_field(api):
    response = api.post("/validate", {"citations": [{"url": "nope", "quote": ""}]}, format="json")
    error = envelope(response)
    fields = {item["field"] for item in error["details"]["errors"]}
    assert fields == {"citations[0].url", "citations[0].quote"}


def test_missing_top_level_field(api):
    error = envelope(api.post("/validate", {}, format="json"))
    assert error["details"]["field"] == "citations"


def test_parse_error(api):
    response = api.post("/validate", data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert envelope(response)["code"] == "invalid_json"


def test_unsupported_media_type(api):
    response = api.post("/validate", data="a=b", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert envelope(response)["code"] == "unsupported_media_type"


def test_method_not_allowed(api):
    response = api.get("/validate")
    assert response.status_code == 405
    assert envelope(response)["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/401", 401, "unauthenticated"),
        ("/401-bad", 401, "unauthenticated"),
        ("/403", 403, "forbidden"),
        ("/404", 404, "not_found"),
        ("/402", 402, "payment_required"),
        ("/422", 422, "match_too_costly"),
        ("/501", 501, "not_on_edge"),
    ],
)
def test_status_and_code(api, path, status, code):
    response = api.get(path)
    assert response.status_code == status
    assert envelope(response)["code"] == code


def test_401_carries_bearer_challenge(api):
    assert api.get("/401")["WWW-Authenticate"].startswith("Bearer")


def test_402_keeps_details(api):
    assert envelope(api.get("/402"))["details"] == {"reason": "no_payment"}


@pytest.mark.parametrize(("path", "status", "wait"), [("/429", 429, "10"), ("/503", 503, "3")])
def test_retry_after_is_kept(api, path, status, wait):
    response = api.get(path)
    assert response.status_code == status
    assert response["Retry-After"] == wait
    assert envelope(response)["details"]["reason"]


def test_unknown_url_outside_drf_is_json_404(api):
    response = api.get("/no/such/route")
    assert response.status_code == 404
    assert envelope(response)["code"] == "not_found"


def test_unknown_error_is_logged_500_without_internals(api, caplog):
    api.raise_request_exception = False
    response = api.get("/500")
    assert response.status_code == 500
    error = envelope(response)
    assert error["code"] == "internal_error"
    assert "hunter2" not in response.content.decode()
    assert error["details"]["request_id"] == response["X-Request-ID"]
    logged = [r for r in caplog.records if r.levelname == "ERROR" and r.exc_info]
    assert logged and isinstance(logged[0].exc_info[1], RuntimeError)


def test_oversized_body_is_413_with_the_limit(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = '{"citations": [], "pad": "' + "x" * 2_000 + '"}'
    response = api.post("/validate", data=body, content_type="application/json")
    assert response.status_code == 413
    error = envelope(response)
    assert error["code"] == "request_too_large"
    assert error["details"]["limit_bytes"] == 1_000


@pytest.mark.urls("wiring.urls")
def test_oversized_body_outside_drf_is_413(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    response = client.post("/admin/login/", {"username": "x" * 2_000, "password": "p"})
    assert response.status_code == 413
    assert envelope(response)["code"] == "request_too_large"


def test_a_server_error_is_logged_with_its_traceback_and_request_id(api):
    # The log line staff search by the request ID a caller quotes must hold the traceback.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIDFilter())
    handler.setFormatter(logging.Formatter("[%(request_id)s %(client_request_id)s] %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        api.raise_request_exception = False
        response = api.get("/500", HTTP_X_REQUEST_ID="caller-9")
    finally:
        root.removeHandler(handler)
    logged = stream.getvalue()
    assert f"[{response['X-Request-ID']} caller-9]" in logged
    assert "Traceback (most recent call last)" in logged
    assert "RuntimeError: secret internals" in logged
    assert logged.count("Traceback (most recent call last)") == 1  # one copy, not two


def test_a_refusal_django_logs_after_the_response_still_names_the_request_id(api):
    # Django logs every 4xx/5xx answer once the middleware has returned, when the request's
    # log context is gone: the line said "-" where staff look for the caller's ID.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIDFilter())
    handler.setFormatter(logging.Formatter("[%(request_id)s %(client_request_id)s] %(message)s"))
    django_request = logging.getLogger("django.request")
    django_request.addHandler(handler)
    try:
        response = api.get("/503", HTTP_X_REQUEST_ID="caller-7")
    finally:
        django_request.removeHandler(handler)
    assert response.status_code == 503
    assert f"[{response['X-Request-ID']} caller-7] Service Unavailable: /503" in stream.getvalue()
