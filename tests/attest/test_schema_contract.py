"""The OpenAPI schema is the contract: checked over every operation it lists, not by hand.

Routes added later are covered without a line here. scripts/fuzz_api.py (in .ci/run)
drives schemathesis against a live service with the same schema; these tests hold the
rules a reader of the schema relies on, and the cases that once disagreed.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from openapi_spec_validator import validate

from tests.citations.conftest import make_ledger

pytestmark = pytest.mark.django_db

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def schema(api) -> dict:
    return json.loads(api.get("/v1/openapi.json").content)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def error_codes(response: dict) -> list[str] | None:
    body = response.get("content", {}).get("application/json", {}).get("schema", {})
    error = body.get("properties", {}).get("error")
    return error["properties"]["code"].get("enum") if error else None


def test_the_schema_is_valid_openapi(schema):
    validate(schema)


def test_the_schema_generates_without_a_warning(tmp_path):
    # A warning (an enum name clash, an unresolvable field) means a reader sees a made-up
    # component name or a guessed type.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s"))


def test_the_schema_names_the_public_url_as_its_server(schema, settings):
    assert schema["servers"] == [
        {"url": settings.ATTEST_PUBLIC_URL, "description": "This service."}
    ]


def test_every_answer_documents_the_request_id_and_every_refusal_its_wait(schema):
    for path, _method, operation in operations(schema):
        for status, response in operation["responses"].items():
            headers = response.get("headers", {})
            assert headers["X-Request-ID"]["required"] is True, (path, status)
            if status in ("429", "503"):
                assert headers["Retry-After"]["required"] is True, (path, status)
                assert headers["Retry-After"]["schema"]["type"] == "integer"


def test_every_operation_documents_500_and_the_outage_503(schema):
    for path, method, operation in operations(schema):
        responses = operation["responses"]
        assert "internal_error" in error_codes(responses["500"]), (path, method)
        if path != "/healthz":  # its 503 is its own status body
            assert "unavailable" in error_codes(responses["503"]), (path, method)


def test_every_operation_with_a_body_documents_invalid_json_413_and_415(schema):
    with_body = [(p, o) for p, _m, o in operations(schema) if "requestBody" in o]
    assert len(with_body) >= 6
    for path, operation in with_body:
        responses = operation["responses"]
        assert error_codes(responses["413"]) == ["request_too_large"], path
        if path == "/mcp":  # JSON-RPC: its own 400 (a parse error), any content type read
            assert "-32700" in responses["400"]["description"]
            assert "415" not in responses
            continue
        assert "invalid_json" in error_codes(responses["400"]), path
        assert error_codes(responses["415"]) == ["unsupported_media_type"], path


def test_limited_and_priced_operations_document_their_headers(schema):
    limited = priced = 0
    for path, _method, operation in operations(schema):
        responses = operation["responses"]
        if "429" in responses:
            limited += 1
            for status, response in responses.items():
                assert {"RateLimit", "RateLimit-Policy"} <= set(response["headers"]), (path, status)
        if "402" in responses:
            priced += 1
            assert responses["402"]["headers"]["PAYMENT-REQUIRED"]["required"] is True
            assert "PAYMENT-RESPONSE" in responses["200"]["headers"], path
    assert limited >= 10 and priced >= 4


def test_every_error_code_has_a_real_example(schema):
    seen = 0
    for path, _method, operation in operations(schema):
        for status, response in operation["responses"].items():
            codes = error_codes(response)
            if not codes:
                continue
            examples = response["content"]["application/json"]["examples"]
            assert sorted(examples) == sorted(codes), (path, status)
            for code, example in examples.items():
                error = example["value"]["error"]
                assert error["code"] == code and error["message"], (path, status, code)
                seen += 1
    assert seen > 50


def _free_form_objects(node, path=""):
    """Objects with no listed keys: Swagger UI would show them as additionalProp1."""
    if isinstance(node, dict):
        if (
            node.get("type") == "object"
            and "properties" not in node
            and node.get("additionalProperties") is not False
            and "example" not in node
            and not path.endswith("/error/properties/details")  # examples per code cover it
        ):
            yield path
        for key, value in node.items():
            yield from _free_form_objects(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _free_form_objects(value, f"{path}/{index}")


def test_no_free_form_object_goes_without_an_example(schema):
    assert list(_free_form_objects(schema)) == []


# --- what the validators take is what the schema says -------------------------------


def _request_schema(schema: dict, path: str) -> dict:
    ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def test_an_empty_message_list_is_refused_and_the_schema_says_so(schema):
    messages = _request_schema(schema, "/v1/observations")["properties"]["messages"]
    assert (messages["minItems"], messages["maxItems"]) == (1, 100)
    response = make_ledger().client.post(
        "/v1/observations", {"subject": "u", "messages": []}, format="json"
    )
    assert response.status_code == 400


def test_a_nul_in_a_query_is_refused_and_the_schema_says_so(schema):
    import re

    query = _request_schema(schema, "/v1/recall")["properties"]["query"]
    assert re.fullmatch(query["pattern"], "a\x00b") is None
    assert re.fullmatch(query["pattern"], "Dublin") is not None
    response = make_ledger().recall("u", query="a\x00b")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "query"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("query", 5),  # was searched for as "5"
        ("subject", 12),
        ("limit", "5"),  # was read as 5
        ("limit", True),
        ("predicate", ["lives_in"]),
    ],
)
def test_wrongly_typed_recall_fields_are_refused(field, value):
    body = {"subject": "u", field: value}
    response = make_ledger().client.post("/v1/recall", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field


@pytest.mark.parametrize(
    ("field", "value"),
    [("session", 7), ("ordinal", "3"), ("ordinal", 2.0), ("id", 1), ("role", 1)],
)
def test_wrongly_typed_message_fields_are_refused(field, value):
    message = {"id": "m1", "role": "user", "text": "hi", "occurred_at": "2026-03-04T10:11:58Z"}
    message[field] = value
    body = {"subject": "u", "messages": [message]}
    response = make_ledger().client.post("/v1/observations", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == f"messages[0].{field}"


def test_a_receipt_page_index_must_be_a_json_integer(api):
    response = api.post("/v1/receipt/verify", {"receipt": "x", "page": "0"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "page"


def test_a_quote_route_names_its_url_rule_in_the_schema(schema):
    import re

    url = _request_schema(schema, "/v1/verify/quote")["properties"]["url"]
    assert re.fullmatch(url["pattern"], "https://example.org/a?b=c")
    assert not re.fullmatch(url["pattern"], "0")
    assert not re.fullmatch(url["pattern"], "ftp://example.org/")
    quote = _request_schema(schema, "/v1/verify/quote")["properties"]["quote"]
    # The raw limit: a longer quote that normalises to 1,000 characters or fewer is accepted.
    assert (
        quote["maxLength"] == 20_000
        and "1,000 characters after normalisation" in quote["description"]
    )


def test_unknown_fields_are_refused_where_the_schema_forbids_them(schema, api):
    assert _request_schema(schema, "/v1/verify/quote")["additionalProperties"] is False
    body = {"url": "https://example.org/", "quote": "x", "treshold": 0.9}
    response = api.post("/v1/verify/quote", body, format="json")
    assert response.status_code == 400


def test_every_limited_answer_carries_the_ratelimit_headers(schema):
    ledger = make_ledger()
    checked = 0
    for path, method, operation in operations(schema):
        if "429" not in operation["responses"]:
            continue
        client = ledger.client
        path = re.sub(r"\{[^}]+\}", "1", path)  # "1" fits every path converter
        response = (
            getattr(client, method)(path, {}, format="json")
            if method == "post"
            else (client.get(path))
        )
        assert response.status_code != 429, path
        assert response["RateLimit-Policy"].startswith('"'), (path, response.status_code)
        assert response["RateLimit"].startswith('"'), path
        checked += 1
    assert checked >= 10


def test_an_optional_blank_string_is_one_schema_that_takes_the_empty_string(schema):
    import jsonschema

    # Written as oneOf [string, empty string], "" matched both and oneOf refused it.
    quote = schema["components"]["schemas"]["ReceiptVerifyRequest"]["properties"]["quote"]
    assert "oneOf" not in quote
    jsonschema.validate("", quote)
    assert "oneOf" not in json.dumps(schema["components"]["schemas"]["MessageInRequest"])


def test_every_operation_has_an_explicit_unique_snake_case_operation_id(schema):
    from attest.schema import OPERATION_IDS

    ids = [
        (method, path, operation.get("operationId"))
        for path, method, operation in operations(schema)
    ]
    for method, path, name in ids:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name or ""), (method, path, name)
        assert OPERATION_IDS[(method, path)] == name  # the table's, not a generated one
    names = [name for _method, _path, name in ids]
    assert len(names) == len(set(names))
    assert {"verify_quote", "jwks_get", "facts_list"} <= set(names)


def test_a_route_without_an_operation_id_stops_the_schema():
    from django.core.exceptions import ImproperlyConfigured

    from attest.schema import name_operations

    paths = {"/v1/new": {"post": {"responses": {}}}, "/v1/verify/quote": {"post": {}}}
    with pytest.raises(ImproperlyConfigured, match=r"POST /v1/new: add it to attest\.schema"):
        name_operations({"paths": paths}, None)
    # A test's own URLconf (tests/billing/urls.py) keeps its generated IDs.
    generator = SimpleNamespace(urlconf="tests.billing.urls")
    result = name_operations({"paths": paths}, generator)
    assert result["paths"]["/v1/verify/quote"]["post"]["operationId"] == "verify_quote"
