"""What every route refuses in a request, by one rule each (DESIGN.md, API conventions).

- text that is not valid Unicode (a lone surrogate from a JSON ``\\udfff`` escape, bytes
  that are not UTF-8), in the body or the query string: 400 ``invalid_request`` naming
  the field, the text never echoed;
- a body field the route does not know, at the top level or nested: 400 naming it;
- a refused choice names the allowed values; a body of the wrong JSON type says what to send.

The JSON routes are read from the published OpenAPI schema, so a route added later is
held to the same rules without a line here.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.citations.conftest import make_ledger

pytestmark = pytest.mark.django_db

SURROGATE = b'"\\udfff"'  # a JSON escape of a lone surrogate, as a client can send it
NOT_UTF8 = b'"caf\xe9"'  # Latin-1 bytes: not UTF-8


@pytest.fixture
def schema(api) -> dict:
    return json.loads(api.get("/v1/openapi.json").content)


def json_routes(schema: dict) -> list[tuple[str, dict]]:
    """(path with its parameters filled in, operation) of every route taking a JSON body."""
    routes = []
    for path, item in schema["paths"].items():
        if path == "/mcp":
            continue  # JSON-RPC: tests/mcp/test_jsonrpc_errors.py sends it such text
        operation = item.get("post")
        if operation and "application/json" in operation.get("requestBody", {}).get("content", {}):
            routes.append((path.replace("{fact_id}", str(uuid.uuid4())), operation))
    return routes


def body_schema(schema: dict, operation: dict) -> dict:
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


def post_raw(client, path: str, body: bytes):
    return client.post(path, body, content_type="application/json")


def refusal(response) -> dict:
    """The error of a 400 whose bytes are UTF-8 JSON holding no lone surrogate."""
    assert response.status_code == 400, response.content[:300]
    text = response.content.decode("utf-8")  # strict: a raw surrogate cannot be in it
    error = json.loads(text)["error"]
    assert "\udfff" not in json.dumps(error, ensure_ascii=False)
    assert "caf\\udce9" not in text and "\ufffd" not in text
    return error


@pytest.fixture
def client_for(api):
    ledger = make_ledger()

    def pick(operation: dict):
        return ledger.client if operation.get("security") else api

    return pick


def test_the_schema_lists_the_json_routes(schema):
    paths = {path for path, _ in json_routes(schema)}
    assert {"/v1/verify/quote", "/v1/recall", "/v1/citations/resolve", "/v1/erasures"} <= paths
    assert len(paths) >= 13


@pytest.mark.parametrize("raw", [SURROGATE, NOT_UTF8], ids=["lone_surrogate", "not_utf8"])
def test_every_json_route_refuses_text_that_is_not_unicode_naming_the_field(
    schema, client_for, raw
):
    for path, operation in json_routes(schema):
        name = next(iter(body_schema(schema, operation)["properties"]))
        response = post_raw(
            client_for(operation), path, b'{"' + name.encode() + b'": ' + raw + b"}"
        )
        error = refusal(response)
        assert (error["code"], error["details"]["field"]) == ("invalid_request", name), path
        assert "not valid Unicode" in error["message"]


def test_every_json_route_refuses_a_field_name_that_is_not_unicode(schema, client_for):
    for path, operation in json_routes(schema):
        error = refusal(post_raw(client_for(operation), path, b'{"a\\ud800b": 1}'))
        assert (error["code"], error["details"]["field"]) == ("invalid_request", "a\\ud800b")


def test_text_deep_in_a_body_is_named_by_its_path(api):
    body = (
        b'{"match": "exact", "citations": [{"url": "https://a.example/", "quote": "ok"},'
        b' {"url": "https://a.example/", "quote": "x\xff"}]}'
    )
    error = refusal(post_raw(api, "/v1/verify/citations", body))
    assert error["details"]["field"] == "citations[1].quote"


def test_a_body_that_is_one_bad_string_is_refused_without_a_field(api):
    error = refusal(post_raw(api, "/v1/verify/quote", SURROGATE))
    assert error["code"] == "invalid_request" and "field" not in error["details"]


# --- the choice fields that answered 500, through a real server ---------------------------


def _choice_cases(ledger_token: str) -> list[tuple[str, dict, bytes]]:
    quote = b'{"url": "https://a.example/", "quote": "ok", "match": %s}'
    citations = b'{"citations": [{"url": "https://a.example/", "quote": "ok"}], "match": %s}'
    quotes = b'{"url": "https://a.example/", "quotes": ["ok"], "match": %s}'
    fact = b'{"subject": "u", "statement": "x", "authored_by": "me", "role": %s}'
    messages = (
        b'{"subject": "u", "messages": [{"id": "m1", "text": "hi", '
        b'"occurred_at": "2026-01-01T00:00:00Z", "role": %s}]}'
    )
    auth = {"Authorization": f"Bearer {ledger_token}"}
    return [
        ("/v1/verify/quote", {}, quote),
        ("/v1/verify/citations", {}, citations),
        ("/v1/verify/quotes", {}, quotes),
        ("/v1/facts", auth, fact),
        ("/v1/observations", auth, messages),
        ("/v1/predicates", auth, b'{"name": "likes_tea", "cardinality": %s}'),
        ("/v1/rebuilds", auth, b'{"scope": %s}'),
    ]


CHOICE_FIELDS = {
    "/v1/verify/quote": "match",
    "/v1/verify/citations": "match",
    "/v1/verify/quotes": "match",
    "/v1/facts": "role",
    "/v1/observations": "messages[0].role",
    "/v1/predicates": "cardinality",
    "/v1/rebuilds": "scope",
}


BAD_CHOICES = [SURROGATE, NOT_UTF8, b'"\\ud83d"']


def test_a_lone_surrogate_or_latin1_in_a_choice_is_400_on_every_route_listed():
    ledger = make_ledger()
    for path, headers, template in _choice_cases(ledger.token):
        auth = {"HTTP_AUTHORIZATION": headers["Authorization"]} if headers else {}
        for raw in BAD_CHOICES:
            response = ledger.client.generic(
                "POST", path, template % raw, content_type="application/json", **auth
            )
            error = refusal(response)
            assert error["code"] == "invalid_request", (path, error)
            assert error["details"]["field"] == CHOICE_FIELDS[path], (path, error)


@pytest.mark.django_db(transaction=True)
def test_the_free_verify_routes_answer_400_not_500_over_http(live_server):
    # Over a real socket: the 500 was the renderer failing to encode the echoed choice.
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        for path, _, template in _choice_cases("")[:3]:
            for raw in BAD_CHOICES:
                response = http.post(
                    path, content=template % raw, headers={"Content-Type": "application/json"}
                )
                error = refusal(response)
                assert error["details"]["field"] == CHOICE_FIELDS[path], (path, error)


def test_a_refused_choice_names_the_allowed_values(api):
    response = post_raw(
        api,
        "/v1/verify/quote",
        b'{"url": "https://a.example/", "quote": "ok", "match": "human"}',
    )
    error = refusal(response)
    assert error["details"]["field"] == "match"
    assert error["message"] == (
        'match: "human" is not allowed; give one of "fuzzy", "exact", "passages".'
    )
    ledger = make_ledger()
    error = refusal(ledger.client.get("/v1/facts?status=gone"))
    assert error["details"]["field"] == "status"
    assert '"current"' in error["message"] and '"retracted"' in error["message"]
    not_text = post_raw(
        api, "/v1/verify/quote", b'{"url": "https://a.example/", "quote": "ok", "match": 1}'
    )
    assert refusal(not_text)["message"].startswith("match: a number is not allowed; give one of")


@pytest.mark.parametrize(
    ("path", "body", "field", "message"),
    [
        (
            "/v1/verify/quote",
            b"[1]",
            None,
            "Send a JSON object with the fields match, case_sensitive, threshold, url, quote, "
            "not an array.",
        ),
        (
            "/v1/fetch",
            b"null",
            None,
            "Send a JSON object with the fields url, not null.",
        ),
        (
            "/v1/verify/citations",
            b'{"citations": {"url": "https://a.example/"}}',
            "citations",
            "citations: Send a JSON array here, not an object.",
        ),
        (
            "/v1/verify/citations",
            b'{"citations": ["https://a.example/"]}',
            "citations[0]",
            "citations[0]: Send a JSON object with the fields url, quote, not a string.",
        ),
    ],
)
def test_a_body_of_the_wrong_json_type_says_what_to_send(api, path, body, field, message):
    error = refusal(post_raw(api, path, body))
    assert error["message"] == message
    assert error["details"].get("field") == field
    assert "Expected a" not in error["message"]


# --- the query string --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=%ff", "status"),
        ("subject=caf%E9", "subject"),
        ("%ED%BF%BF=1", "\\udced\\udcbf\\udcbf"),
    ],
)
def test_a_query_string_that_is_not_utf8_is_refused_naming_the_parameter(query, field):
    ledger = make_ledger()
    error = refusal(ledger.client.get(f"/v1/facts?{query}"))
    assert (error["code"], error["details"]["field"]) == ("invalid_request", field)


def test_a_query_string_that_is_not_utf8_is_refused_on_a_free_route_too(api):
    error = refusal(api.get("/v1/sample/quote?match=fuzz%FFy"))
    assert error["details"]["field"] == "match"
    assert "not valid Unicode" in error["message"]
    assert api.get("/v1/sample/quote?match=exact&page=demo").status_code == 200


# --- unknown fields ----------------------------------------------------------------------


def test_every_json_route_refuses_an_unknown_top_level_field_by_name(schema, client_for):
    for path, operation in json_routes(schema):
        response = client_for(operation).post(path, {"zz_not_a_field": 1}, format="json")
        assert response.status_code == 400, (path, response.content[:200])
        error = response.json()["error"]
        assert error["details"]["field"] == "zz_not_a_field", path
        assert error["code"] == "invalid_request", path


def _objects(node, schema: dict, seen: set[str]):
    """Every object schema a request body can hold, following $refs once each."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref is not None:
            name = ref.rsplit("/", 1)[1]
            if name not in seen:
                seen.add(name)
                yield from _objects(schema["components"]["schemas"][name], schema, seen)
            return
        if node.get("type") == "object" and "properties" in node:
            yield node
        for value in node.values():
            yield from _objects(value, schema, seen)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value, schema, seen)


def test_every_request_object_in_the_schema_refuses_unknown_fields(schema):
    # additionalProperties: false is written for NoUnknownFields serializers only
    # (attest.fields.NoUnknownFieldsSchema), so this holds every body's serializer, and
    # every object nested in one, to the mechanism.
    for path, operation in json_routes(schema):
        for node in _objects(operation["requestBody"], schema, set()):
            assert node.get("additionalProperties") is False, (path, sorted(node["properties"]))


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/recall", {"subject": "u", "valid_at": "2000-01-01T00:00:00Z"}, "valid_at"),
        (
            "/v1/recall",
            {"subject": "u", "as_of": {"valid_at": "2000-01-01T00:00:00Z", "x": 1}},
            "as_of.x",
        ),
        ("/v1/erasures", {"subject": "u", "everything": True}, "everything"),
        ("/v1/rebuilds", {"scope": "project", "force": True}, "force"),
        (
            "/v1/observations",
            {
                "subject": "u",
                "messages": [
                    {
                        "id": "m",
                        "role": "user",
                        "text": "t",
                        "occurred_at": "2026-01-01T00:00:00Z",
                        "lang": "en",
                    }
                ],
            },
            "messages[0].lang",
        ),
        (
            "/v1/facts",
            {"subject": "u", "statement": "s", "authored_by": "me", "source": "x"},
            "source",
        ),
    ],
)
def test_a_misplaced_or_unknown_ledger_field_is_refused_not_ignored(path, body, field):
    ledger = make_ledger()
    response = ledger.client.post(path, body, format="json")
    error = refusal(response)
    assert (error["code"], error["details"]["field"]) == ("invalid_request", field)
    assert "not known here" in error["message"]


def test_resolve_refuses_known_at_outside_as_of(ledger_with_fact):
    ledger, fact_id = ledger_with_fact
    misplaced = ledger.resolve(fact_id, known_at="2000-01-01T00:00:00Z")
    error = refusal(misplaced)
    assert (error["code"], error["details"]["field"]) == ("invalid_request", "known_at")
    assert ledger.resolve(fact_id, as_of={"known_at": "2000-01-01T00:00:00Z"}).status_code == 404
    assert ledger.resolve(fact_id).status_code == 200


def test_the_free_sample_refuses_an_unknown_query_parameter(api):
    error = refusal(api.get("/v1/sample/quote?match=exact&mode=passages"))
    assert (error["code"], error["details"]["field"]) == ("invalid_request", "mode")


def test_receipt_verify_refuses_an_unknown_field(api):
    error = refusal(api.post("/v1/receipt/verify", {"receipt": "a.b.c", "key": "x"}, format="json"))
    assert (error["code"], error["details"]["field"]) == ("invalid_request", "key")


@pytest.fixture
def ledger_with_fact():
    ledger = make_ledger()
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-01-01T00:00:00Z"))
    response = ledger.client.post("/v1/recall", {"subject": "u"}, format="json")
    facts = response.json()["facts"]
    assert facts, response.json()
    return ledger, facts[0]["id"]
