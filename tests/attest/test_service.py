"""Health, schema, landing page, request IDs and settings."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attest.logs import RequestIDFilter
from receipts.services import verify_receipt

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_healthz_answers_ok(api):
    response = api.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_openapi_schema_is_openapi_3(api):
    response = api.get("/v1/openapi.json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    assert "/healthz" in schema["paths"]


@pytest.mark.django_db
def test_api_docs_page_serves_html(client):
    response = client.get("/docs/api")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


@pytest.mark.django_db
def test_landing_page_links_docs_schema_and_samples(client):
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    for link in ("/docs/api", "/v1/openapi.json", "/v1/sample/quote"):
        assert f'href="{link}' in page


@pytest.mark.django_db
@pytest.mark.django_db
def test_unknown_route_is_json_404(api):
    response = api.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_request_id_is_generated(api):
    response = api.get("/healthz")
    assert len(response["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_the_server_makes_the_request_id_and_keeps_the_callers_apart(api):
    # A caller-chosen ID could make two receipts share one ID or claim another call's.
    first = api.get("/v1/sample/quote", HTTP_X_REQUEST_ID="trace-abc.123")
    second = api.get("/v1/sample/quote", HTTP_X_REQUEST_ID="trace-abc.123")
    ids = [first["X-Request-ID"], second["X-Request-ID"]]
    assert "trace-abc.123" not in ids and ids[0] != ids[1]
    for response, request_id in zip((first, second), ids, strict=True):
        check = verify_receipt(receipt=response.json()["receipt"])
        assert check.claims["request_id"] == request_id
        assert check.claims["client_request_id"] == "trace-abc.123"
    unlabelled = verify_receipt(receipt=api.get("/v1/sample/quote").json()["receipt"])
    assert unlabelled.claims["client_request_id"] is None


@pytest.mark.django_db
def test_receipt_verify_shows_both_request_ids(api):
    response = api.get("/v1/sample/quote", HTTP_X_REQUEST_ID="mine-7")
    checked = api.post(
        "/v1/receipt/verify", {"receipt": response.json()["receipt"]}, format="json"
    ).json()
    assert checked["request_id"] == response["X-Request-ID"]
    assert checked["client_request_id"] == "mine-7"


@pytest.mark.django_db
def test_unsafe_request_id_is_replaced(api):
    response = api.get("/healthz", HTTP_X_REQUEST_ID="evil\nheader" + "x" * 200)
    assert response["X-Request-ID"] != "evil\nheader" + "x" * 200
    assert len(response["X-Request-ID"]) == 32


def test_log_records_carry_request_id():
    from attest.logs import request_id_var

    token = request_id_var.set("req-42")
    try:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
        assert RequestIDFilter().filter(record)
        assert record.request_id == "req-42"
        assert record.client_request_id == "-"
    finally:
        request_id_var.reset(token)


def _start_django(
    extra_env: dict[str, str], code: str = "import django; django.setup(); print('started')"
) -> subprocess.CompletedProcess:
    outside = ("DATABASE_URL", "CACHE_URL", "SECRET_KEY", "ATTEST_VAR_DIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(outside)}
    env.update(extra_env)
    env["DJANGO_SETTINGS_MODULE"] = "attest.settings"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "value",
    ["mysql-ish-garbage", "ftp://example.org/db", "postgres://user@localhost/"],
)
def test_malformed_database_url_is_refused(value):
    result = _start_django({"DATABASE_URL": value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "DATABASE_URL" in result.stderr


def test_malformed_cache_url_is_refused():
    result = _start_django({"CACHE_URL": "memcached-ish://x"})
    assert result.returncode != 0
    assert "CACHE_URL" in result.stderr


def test_malformed_fetch_allow_is_refused():
    result = _start_django({"ATTEST_FETCH_ALLOW": "127.0.0.1"})
    assert result.returncode != 0
    assert "ATTEST_FETCH_ALLOW" in result.stderr


def test_malformed_debug_is_refused():
    result = _start_django({"DEBUG": "perhaps"})
    assert result.returncode != 0
    assert "DEBUG" in result.stderr or "ValueError" in result.stderr


def test_a_postgresql_service_without_secret_key_refuses_to_start_and_says_why():
    # A key generated per host would make cursors signed on one host fail on another.
    result = _start_django({"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/attest"})
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in result.stderr
    assert "every host must share one secret key" in result.stderr
    started = _start_django(
        {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/attest", "SECRET_KEY": "k" * 50}
    )
    assert started.returncode == 0, started.stderr


def test_an_embedded_sqlite_service_generates_its_secret_key_once(tmp_path):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "ATTEST_VAR_DIR": str(tmp_path)}
    assert _start_django(env).returncode == 0
    key = (tmp_path / "secret_key").read_text()
    assert len(key) >= 50
    assert _start_django(env).returncode == 0
    assert (tmp_path / "secret_key").read_text() == key


@pytest.mark.parametrize(("query", "kept"), [("", "600 True"), ("?CONN_MAX_AGE=0", "0 True")])
def test_database_connections_are_kept_between_requests_unless_the_url_says_not(query, kept):
    show = (
        "import django; django.setup(); from django.conf import settings; "
        "d = settings.DATABASES['default']; print(d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS'])"
    )
    url = f"sqlite:////tmp/attest-settings-test.sqlite3{query}"
    result = _start_django({"DATABASE_URL": url}, code=show)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == kept


def test_valid_settings_start():
    result = _start_django({"DATABASE_URL": "sqlite:////tmp/attest-settings-test.sqlite3"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


@pytest.mark.django_db
def test_every_documented_api_error_is_the_one_envelope(api):
    schema = json.loads(api.get("/v1/openapi.json").content)
    # /healthz reports its own status body; the sample 404 is an HTML page; /mcp answers
    # a JSON-RPC error object (400) and its 405 is the transport's.
    own_bodies = {
        ("/healthz", "503"),
        ("/v1/sample/missing", "404"),
        ("/mcp", "400"),
        ("/mcp", "405"),
    }
    documented = 0
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                if int(status) < 400 or (path, status) in own_bodies:
                    continue
                documented += 1
                schema = response["content"]["application/json"]["schema"]
                error = schema["properties"]["error"]
                assert schema["required"] == ["error"], (path, status)
                assert error["required"] == ["code", "message", "details"], (path, status)
                assert error["properties"]["code"]["enum"], (path, status)
    assert documented > 20
