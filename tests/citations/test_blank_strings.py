"""A ledger string made of white space alone is blank to the schema and to the validator.

DRF trims a string with str.strip() before it refuses a blank one, so every character
str.isspace() calls white space must be one the schema's pattern cannot count as the
required visible character, however the pattern is read: by Python, by schemathesis
(Python's re with ASCII classes) and by the Rust validator schemathesis checks answers
with (ECMA-262's classes).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from urllib.parse import quote

import jsonschema_rs
import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework import serializers

from citations.api.views import LedgerView

pytestmark = pytest.mark.django_db

WHITESPACE = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()]
# Characters some reading of "\s" takes for white space, or that look blank, which
# str.strip() keeps: a string of them is not blank to the validator.
NOT_WHITESPACE = ["\ufeff", "\u200b", "\u180e", "\u2060", "\x1b"]


def readings(pattern: str) -> dict[str, Callable[[str], bool]]:
    """Whether a value matches ``pattern``, as each reader of the schema reads it."""
    rust = jsonschema_rs.validator_for({"type": "string", "pattern": pattern})
    return {
        "python": lambda value: re.search(pattern, value) is not None,
        "schemathesis": lambda value: re.search(pattern, value, re.ASCII) is not None,
        "ecma": rust.is_valid,
    }


def _inputs(schema: dict) -> Iterator[tuple[str, serializers.Serializer, dict]]:
    """(route, serializer, its documented fields) of every ledger route's body and query."""
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    for path, _, method, view in generator._get_paths_and_endpoints():
        if not isinstance(view, LedgerView):
            continue
        operation = schema["paths"][path][method.lower()]
        view.schema.method, view.schema.path = method, path  # what get_operation sets
        if "requestBody" in operation:
            body = operation["requestBody"]["content"]["application/json"]["schema"]
            yield f"{method} {path}", view.schema.get_request_serializer()(), _ref(schema, body)
        query = {p["name"]: p["schema"] for p in operation.get("parameters", [])}
        for parameters in view.schema.get_override_parameters():
            if isinstance(parameters, type) and issubclass(parameters, serializers.Serializer):
                yield f"{method} {path}?", parameters(), query


def _ref(schema: dict, node: dict) -> dict:
    """The properties of an object schema, following its reference."""
    if "allOf" in node:
        (node,) = node["allOf"]
    name = node["$ref"].removeprefix("#/components/schemas/")
    return schema["components"]["schemas"][name]["properties"]


def _blank_refusing(
    serializer: serializers.Serializer, documented: dict, schema: dict, where: str
) -> Iterator[tuple[str, serializers.CharField, dict]]:
    for name, field in serializer.fields.items():
        node = documented[name]
        if isinstance(field, serializers.ListField):
            field, node, name = field.child, node["items"], f"{name}[]"
        if isinstance(field, serializers.Serializer):
            yield from _blank_refusing(field, _ref(schema, node), schema, f"{where}.{name}")
        elif (
            isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and node.get("type") == "string"
        ):
            yield f"{where}{name}" if where.endswith("?") else f"{where} {name}", field, node


def ledger_string_fields(schema: dict) -> list[tuple[str, serializers.CharField, dict]]:
    """Every string field of a ledger route that refuses blanks, with its documented schema."""
    found = []
    for where, serializer, documented in _inputs(schema):
        found.extend(_blank_refusing(serializer, documented, schema, where))
    return found


def _refused_as_blank(field: serializers.CharField, value: str) -> bool:
    try:
        field.run_validation(value)
    except serializers.ValidationError as exc:
        return any(detail.code == "blank" for detail in exc.detail)
    return False


def _accepted(field: serializers.CharField, value: str) -> bool:
    try:
        field.run_validation(value)
    except serializers.ValidationError:
        return False
    return True


def test_every_white_space_string_is_blank_to_the_schema_and_the_validator(api):
    schema = api.get("/v1/openapi.json").json()
    fields = ledger_string_fields(schema)
    names = {name for name, _, _ in fields}
    # The walk finds the fields it must (else it could pass by finding none).
    for expected in (
        "POST /v1/observations subject",
        "POST /v1/observations.messages[] id",
        "POST /v1/facts subject",
        "POST /v1/facts authored_by",
        "GET /v1/facts?subject",
        "POST /v1/facts/{fact_id}/retract.replacement statement",
        "POST /v1/erasures subject",
    ):
        assert expected in names, sorted(names)
    for name, field, node in fields:
        pattern = node.get("pattern")
        assert pattern, f"{name}: no pattern says a blank string is refused"
        for reader, matches in readings(pattern).items():
            for char in WHITESPACE:
                for value in (char, char * 3, f"{char} {char}"):
                    assert _refused_as_blank(field, value), (name, hex(ord(char)))
                    assert not matches(value), (name, reader, hex(ord(char)))
                visible = f"x{char}"
                assert _accepted(field, visible) and matches(visible), (name, reader)
            for char in NOT_WHITESPACE:
                assert _accepted(field, char) == matches(char), (name, reader, hex(ord(char)))


@pytest.mark.parametrize("char", WHITESPACE, ids=lambda char: f"U+{ord(char):04X}")
def test_a_white_space_subject_is_refused_by_name_on_every_route(ledger, char):
    authored = {
        "subject": char,
        "predicate": "lives_in",
        "statement": "Lives in Cork.",
        "value": "Cork",
        "authored_by": "support:ana",
    }
    for response in (
        ledger.client.post("/v1/facts", authored, format="json"),
        ledger.client.get(f"/v1/facts?subject={quote(char)}"),
        ledger.recall(char),
    ):
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert (error["code"], error["details"]["field"]) == ("invalid_request", "subject")
