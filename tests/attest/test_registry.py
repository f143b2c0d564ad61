"""The registry the apps fill (attest.registry) and the wiring reads: errors, limits, panels."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from attest import registry
from wiring.dashboard import Day
from wiring.docs import PAGES


def test_reading_a_route_no_app_registered_raises_instead_of_an_empty_table():
    with pytest.raises(LookupError, match="POST /v1/nowhere"):
        registry.errors("POST /v1/nowhere")
    with pytest.raises(LookupError, match="no such table"):
        registry.table("no such table")


def test_a_route_s_errors_are_registered_once():
    with pytest.raises(ValueError, match="registered already"):
        registry.register_errors("POST /v1/fetch", ())


def test_a_limit_joins_only_a_group_the_limits_page_shows():
    with pytest.raises(ValueError, match="not a limits group"):
        registry.register_limits("Elsewhere", list)


def test_the_limits_page_shows_the_groups_in_their_order_each_one_filled():
    groups = registry.limits()
    assert [name for name, _ in groups] == list(registry.LIMIT_GROUPS)
    assert all(rows for _, rows in groups)


def test_a_dashboard_count_names_a_column_the_dashboard_has():
    day = Day(None)
    day.add("calls", 2)
    day.add("settled", {"n|a": 5})
    day.add("settled", {"n|a": 1})
    assert (day.calls, day.settled) == (2, {"n|a": 6})
    with pytest.raises(ValueError, match="no column"):
        day.add("visits", 1)


def test_every_app_registers_its_dashboard_counts():
    owners = {counts.__module__ for counts in registry.daily()}
    assert owners == {"verification.admin", "billing.admin", "citations.admin"}


def _schema_codes(responses: dict, status: str) -> set[str]:
    content = responses[status].get("content", {}).get("application/json", {})
    error = content.get("schema", {}).get("properties", {}).get("error", {})
    return set(error.get("properties", {}).get("code", {}).get("enum") or ())


@pytest.mark.parametrize("doc", [d for d in PAGES if d.route], ids=lambda d: d.slug)
def test_a_route_s_registered_errors_are_the_codes_its_schema_documents(doc):
    """Per status, the docs page's list and the schema's enum name the same codes."""
    method, path = doc.route.split(" ", 1)
    schema = SchemaGenerator().get_schema(request=None, public=True)
    responses = schema["paths"][path][method.lower()]["responses"]
    registered: dict[str, set[str]] = {}
    for error in registry.errors(doc.route):
        registered.setdefault(str(error.status), set()).add(error.code)
    documented = {status: _schema_codes(responses, status) for status in responses}
    assert registered == {status: codes for status, codes in documented.items() if codes}


def _operations(schema: dict):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def test_a_route_s_schema_is_built_from_its_registered_errors():
    """Each error a route registers is in its schema as registered: its code in the status's
    enum and what it means in the status's description (the one list, read by both)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    checked = 0
    for route, operation in _operations(schema):
        try:
            registered = registry.errors(route)
        except LookupError:
            continue
        checked += 1
        for error in registered:
            response = operation["responses"][str(error.status)]
            assert error.code in _schema_codes(operation["responses"], str(error.status))
            if error not in (*registry.BODY_ERRORS, registry.INTERNAL, registry.UNAVAILABLE):
                assert f"{error.code}: {error.when}" in response["description"], (route, error)
    assert checked == 25  # every documented route but healthz, jwks and the HTML samples
