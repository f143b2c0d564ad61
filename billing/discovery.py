"""The x402 ``bazaar`` discovery extension of a priced route's offer, from the OpenAPI schema.

The request body's and the 200 answer's schemas are the components drf-spectacular
generates for the route (one source, so the offer never describes another shape than
the API takes), with each ``$ref`` written out, since the extension carries plain JSON
Schema. Generating the schema takes seconds, so a serving process builds every priced
route's extension once before its first request (``discovery_prepare``, a serving hook),
not on its first 402.
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from x402.extensions.bazaar import OutputConfig, declare_discovery_extension

from billing.pricing import PRICED_ROUTES, PricedRoute

_JSON = "application/json"


@functools.cache
def _openapi() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    generator = SchemaGenerator(urlconf=settings.ATTEST_API_URLCONF)
    return generator.get_schema(request=None, public=True)


def _inline(node: Any, components: dict[str, Any]) -> Any:
    """``node`` with every ``#/components/schemas/...`` reference replaced by its schema."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            return _inline(components[ref.rsplit("/", 1)[1]], components)
        return {key: _inline(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value, components) for value in node]
    return node


@functools.cache
def route_discovery(route: PricedRoute) -> dict[str, Any]:
    """``{"bazaar": ...}`` for ``route``: its method, body schema and example, answer schema."""
    schema = _openapi()
    components = schema.get("components", {}).get("schemas", {})
    operation = schema["paths"][f"/v1/{route.name}"]["post"]
    body = operation["requestBody"]["content"][_JSON]
    examples = [example["value"] for example in body.get("examples", {}).values()]
    answer = operation["responses"]["200"]["content"][_JSON]
    extension = declare_discovery_extension(
        input=examples[0] if examples else None,
        input_schema=_inline(body["schema"], components),
        body_type="json",
        output=OutputConfig(schema=_inline(answer["schema"], components)),
    )
    extension["bazaar"]["info"]["input"]["method"] = "POST"
    return extension


def discovery_prepare() -> None:
    """Build every priced route's extension now (a serving hook: before the first request)."""
    for route in PRICED_ROUTES.values():
        route_discovery(route)
