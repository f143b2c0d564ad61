"""The MCP tools: each one a REST route, its input schema that route's request body.

A tool is only a name, a description written for a model, and the route it runs. The
schemas come from the OpenAPI document the service already generates (drf-spectacular),
inlined into plain JSON Schema, so a tool cannot accept what its route refuses or the
reverse.
"""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import types

_CONTENT_KIND = (
    " Read `page.content_kind` before `match`: only `real` is the page's content; on "
    "`bot_wall`, `js_shell`, `http_error`, `empty` or `timeout` a `none` means the page "
    "could not be read, not that the words are absent."
)
_PAID = (
    " Priced per call (x402): the first calls of a day are a free trial, then the tool "
    "answers with an x402 offer that an x402 MCP client pays and retries."
)


@dataclass(frozen=True)
class Hints:
    """MCP tool annotations, as true of the tool. A priced call is not read-only (it moves
    money and appends a receipt to the transparency log) nor idempotent (a new payment is a
    new charge); `open_world` marks the tools that fetch pages from the web."""

    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


_PRICED_WEB = Hints(read_only=False, open_world=True)
_READ = Hints(read_only=True, idempotent=True)


@dataclass(frozen=True)
class Tool:
    name: str
    method: str  # the route's HTTP method
    path: str  # the route's path; {fact_id} is taken from the arguments
    description: str
    hints: Hints
    ledger: bool = False  # needs `Authorization: Bearer <credential>` on the MCP request
    priced: str | None = None  # the route's name in billing's price list

    @property
    def path_parameter(self) -> str | None:
        """The one path parameter the route takes, if any (``fact_id``)."""
        found = re.search(r"\{(\w+)\}", self.path)
        return found.group(1) if found else None


TOOLS: tuple[Tool, ...] = (
    Tool(
        "verify_quote",
        "POST",
        "/v1/verify/quote",
        "Check that one quote appears on the page at a URL (HTML or PDF). Use it before "
        "quoting a source: it fetches the page, says what kind of page came back, and "
        "whether the quote is on it (`exact`, `fuzzy` with a score, or `none`), with "
        "offsets, context and a signed receipt." + _CONTENT_KIND + _PAID,
        hints=_PRICED_WEB,
        priced="verify/quote",
    ),
    Tool(
        "verify_quotes",
        "POST",
        "/v1/verify/quotes",
        "Check several quotes against the same page in one call (one fetch). Prefer it to "
        "repeated verify_quote calls on one URL." + _CONTENT_KIND + _PAID,
        hints=_PRICED_WEB,
        priced="verify/quotes",
    ),
    Tool(
        "verify_citations",
        "POST",
        "/v1/verify/citations",
        "Check a batch of citations, each a URL with a quote or a claim, across different "
        "pages; for a claim it returns the passages that best support it. Use it to audit "
        "a finished answer's sources." + _CONTENT_KIND + _PAID,
        hints=_PRICED_WEB,
        priced="verify/citations",
    ),
    Tool(
        "fetch_page",
        "POST",
        "/v1/fetch",
        "Fetch a page and return its normalised text, its content_kind and a signed "
        "receipt of what was read. Use it to read a source; use verify_quote to check a "
        "quote on it." + _PAID,
        hints=_PRICED_WEB,
        priced="fetch",
    ),
    Tool(
        "check_receipt",
        "POST",
        "/v1/receipt/verify",
        "Check an Attest receipt (a compact JWS from any answer): its signature, key and "
        "claims, and optionally that a text or quote is the one it covers. Free.",
        hints=_READ,
    ),
    Tool(
        "ingest_messages",
        "POST",
        "/v1/observations",
        "Store conversation messages about a subject in the fact ledger; the extractor "
        "turns them into facts, each tied to the exact bytes it came from.",
        hints=Hints(read_only=False),
        ledger=True,
    ),
    Tool(
        "recall_facts",
        "POST",
        "/v1/recall",
        "Recall what the ledger holds about a subject now, or as of a valid time and a "
        "known time. Use it before answering from memory; pass the question as `query` to "
        "get the facts ranked by relevance, each with a `score`.",
        hints=_READ,
        ledger=True,
    ),
    Tool(
        "resolve_fact",
        "POST",
        "/v1/citations/resolve",
        "Resolve a fact ID to its evidence, re-read from the stored message or page: the "
        "exact quote, its byte offsets and context.",
        hints=_READ,
        ledger=True,
    ),
    Tool(
        "record_fact",
        "POST",
        "/v1/facts",
        "Record a fact you extracted yourself, with the message evidence it rests on.",
        hints=Hints(read_only=False),
        ledger=True,
    ),
    Tool(
        "retract_fact",
        "POST",
        "/v1/facts/{fact_id}/retract",
        "Retract a fact (by `fact_id`) that turned out wrong, optionally naming what "
        "replaces it; the history is kept.",
        hints=Hints(read_only=False, destructive=True, idempotent=True),
        ledger=True,
    ),
    Tool(
        "list_facts",
        "GET",
        "/v1/facts",
        "List the ledger's facts, filtered by subject, predicate or status, a page at a "
        "time (pass the answer's cursor as `after`).",
        hints=_READ,
        ledger=True,
    ),
    Tool(
        "list_changes",
        "POST",
        "/v1/changes",
        "List what changed in the ledger since you last looked (facts created, superseded, "
        "retracted, reinterpreted, erased), in commit order, for the project or one "
        "subject; keep the answer's `next` and pass it as `after` next time.",
        hints=_READ,
        ledger=True,
    ),
    Tool(
        "list_subjects",
        "GET",
        "/v1/subjects",
        "List the subjects the ledger holds facts about, each with its number of facts and "
        "when it last sent a message, a page at a time (pass the cursor as `after`).",
        hints=_READ,
        ledger=True,
    ),
)

BY_NAME = {tool.name: tool for tool in TOOLS}


def _inline(node: Any, components: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """An OpenAPI 3.0 schema as self-contained JSON Schema: refs inlined, nullable spelled."""
    if isinstance(node, list):
        return [_inline(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name in seen:  # a recursive schema: stop at any object
            return {"type": "object"}
        return _inline(components[name], components, (*seen, name))
    out = {key: _inline(value, components, seen) for key, value in node.items()}
    if out.pop("nullable", False):
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif "type" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
    out.pop("readOnly", None)
    return out


def _operation(document: dict[str, Any], tool: Tool) -> dict[str, Any]:
    return document["paths"][tool.path][tool.method.lower()]


def _input_schema(document: dict[str, Any], tool: Tool) -> dict[str, Any]:
    components = document.get("components", {}).get("schemas", {})
    operation = _operation(document, tool)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    schema: dict[str, Any] = _inline(body["schema"], components) if body else {"type": "object"}
    schema = copy.deepcopy(schema)
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    for parameter in operation.get("parameters", []):
        if parameter.get("in") not in ("path", "query"):
            continue  # the payment header travels in _meta, not in the arguments
        properties[parameter["name"]] = {
            **_inline(parameter.get("schema", {}), components),
            **({"description": parameter["description"]} if parameter.get("description") else {}),
        }
        if parameter.get("required"):
            schema.setdefault("required", []).append(parameter["name"])
    return schema


@functools.cache
def _document() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def output_schema(document: dict[str, Any], tool: Tool) -> dict[str, Any]:
    """The route's success body (its one 2xx JSON response) as self-contained JSON Schema."""
    components = document.get("components", {}).get("schemas", {})
    [schema] = [
        response["content"]["application/json"]["schema"]
        for status, response in _operation(document, tool)["responses"].items()
        if str(status).startswith("2") and "application/json" in response.get("content", {})
    ]
    inlined: dict[str, Any] = _inline(schema, components)
    return inlined


@functools.cache
def mcp_tool(name: str) -> types.Tool:
    """The MCP definition of one tool, built once per process from the OpenAPI document."""
    from mcp import types  # the SDK's types: imported by the first MCP call, not at start-up

    tool, document = BY_NAME[name], _document()
    operation = _operation(document, tool)
    return types.Tool(
        name=tool.name,
        title=operation.get("summary") or None,
        description=tool.description,
        inputSchema=_input_schema(document, tool),
        outputSchema=output_schema(document, tool),
        annotations=types.ToolAnnotations(
            readOnlyHint=tool.hints.read_only,
            destructiveHint=tool.hints.destructive,
            idempotentHint=tool.hints.idempotent,
            openWorldHint=tool.hints.open_world,
        ),
    )


@functools.cache
def tool_definition(name: str) -> dict[str, Any]:
    """One tool as it goes on the wire (both eras list the same definitions)."""
    dumped: dict[str, Any] = mcp_tool(name).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    return dumped


def visible_tools(*, credential: bool) -> list[Tool]:
    """The tools a caller sees: the ledger's only with a credential on the request."""
    return [tool for tool in TOOLS if credential or not tool.ledger]
