"""Check a response body against the schema the service publishes at /v1/openapi.json."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

FORMATS = FormatChecker(formats=())


@FORMATS.checks("uuid", raises=ValueError)
def _uuid(value: object) -> bool:
    return not isinstance(value, str) or str(uuid.UUID(value)) == value


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            raise ValueError("no offset")
    return True


def _strict(node: Any) -> Any:
    """OpenAPI 3.0 to JSON Schema, refusing fields the schema does not document."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _strict(value) for key, value in node.items()}
    if node.pop("nullable", False):
        node = {"anyOf": [node, {"type": "null"}]}
    elif node.get("type") == "object" and "properties" in node:
        node.setdefault("additionalProperties", False)
    return node


def assert_matches_schema(
    schema: dict, path: str, method: str, response, content_type="application/json"
):
    """The response's body is what the schema documents for its path, method and status."""
    operation = schema["paths"][path][method]
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, f"{method.upper()} {path} {response.status_code} undocumented"
    body_schema = documented["content"][content_type]["schema"]
    root = {**_strict(body_schema), "components": _strict(schema["components"])}
    validator = Draft202012Validator(root, format_checker=FORMATS)
    errors = sorted(validator.iter_errors(response.json()), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
