"""Each docs example's ``curl`` command, shown again as the same call through ``attest_client``.

The Python is written from the request the page shows (method, path, JSON body, whether it
carries the credential), so the two cannot say different things; tests/attest/test_docs.py
runs every one against the service and checks it answers what the curl example answers.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

# A docs example: the request, then (in the same block) the status it answers.
_EXAMPLE = re.compile(
    r"(<pre data-request>)(?P<curl>.*?)(</pre>)"
    r"(?P<between>.*?<code data-status>(?P<status>\d+)</code>)",
    re.S,
)
CREDENTIAL_VARIABLE = "ATTEST_CREDENTIAL"


@dataclass(frozen=True)
class Request:
    method: str
    base_url: str
    path: str
    query: list[tuple[str, str]]
    body: Any
    authorized: bool


def parse_curl(text: str) -> Request:
    """The request a docs ``curl`` command sends (only the options the docs use)."""
    words = shlex.split(text.replace("\\\n", " "))
    if not words or words[0] != "curl":
        raise ValueError(f"not a curl command: {text[:80]!r}")
    method, url, body, authorized = "GET", "", None, False
    options = iter(words[1:])
    for word in options:
        if word == "-X":
            method = next(options)
        elif word == "-H":
            header = next(options)
            authorized = authorized or header.startswith("Authorization: Bearer ")
        elif word == "-d":
            body = json.loads(next(options))
            method = "POST" if method == "GET" else method
        elif word != "-sS":
            url = word
    parts = urlsplit(url)
    return Request(
        method=method,
        base_url=f"{parts.scheme}://{parts.netloc}",
        path=parts.path,
        query=parse_qsl(parts.query),
        body=body,
        authorized=authorized,
    )


# (method, path pattern) -> client method; a path's groups are the method's first arguments.
_ROUTES: tuple[tuple[str, str, str], ...] = (
    ("POST", r"/v1/verify/quote", "verify_quote"),
    ("POST", r"/v1/verify/quotes", "verify_quotes"),
    ("POST", r"/v1/verify/citations", "verify_citations"),
    ("POST", r"/v1/fetch", "fetch"),
    ("GET", r"/v1/sample/quote", "sample_quote"),
    ("GET", r"/v1/sample/citations", "sample_citations"),
    ("GET", r"/\.well-known/jwks\.json", "jwks"),
    ("POST", r"/v1/receipt/verify", "receipt_verify"),
    ("POST", r"/v1/observations", "ingest"),
    ("POST", r"/v1/recall", "recall"),
    ("POST", r"/v1/changes", "changes"),
    ("GET", r"/v1/subjects", "subjects"),
    ("POST", r"/v1/citations/resolve", "resolve"),
    ("GET", r"/v1/facts", "facts"),
    ("POST", r"/v1/facts", "record_fact"),
    ("POST", r"/v1/facts/(?P<fact_id>[^/]+)/retract", "retract"),
    ("GET", r"/v1/predicates", "predicates"),
    ("POST", r"/v1/predicates", "declare_predicate"),
    ("POST", r"/v1/rebuilds", "rebuild"),
    ("GET", r"/v1/rebuilds/(?P<generation_id>\d+)", "rebuild_status"),
    ("POST", r"/v1/erasures", "erase"),
    ("GET", r"/v1/subjects/(?P<subject>[^/]+)/export", "export"),
    ("GET", r"/healthz", "health"),
)
# Body fields a client method names otherwise.
_RENAMED = {"resolve": {"id": "fact_id"}}


def _route(request: Request) -> tuple[str, re.Match[str]]:
    for method, pattern, name in _ROUTES:
        found = re.fullmatch(pattern, request.path)
        if method == request.method and found:
            return name, found
    raise LookupError(f"no client method for {request.method} {request.path}")


def client_call(request: Request) -> tuple[str, dict[str, Any]]:
    """The client method that sends ``request``, and its keyword arguments."""
    name, found = _route(request)
    arguments: dict[str, Any] = {key: unquote(value) for key, value in found.groupdict().items()}
    if name == "rebuild_status":
        arguments["generation_id"] = int(arguments["generation_id"])
    arguments.update(request.query)
    body: dict[str, Any] = dict(request.body or {})
    if name == "rebuild" and body == {"scope": "project"}:
        body = {"project": True}
    renamed = _RENAMED.get(name, {})
    arguments.update({renamed.get(key, key): value for key, value in body.items()})
    return name, arguments


def _literal(value: Any, indent: int) -> str:
    """``value`` as Python source, strings in double quotes, split over lines past 88 columns."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list):
        return repr(value)
    if isinstance(value, dict):
        items = [f"{_literal(k, 0)}: {_literal(v, indent + 4)}" for k, v in value.items()]
        opening, closing = "{", "}"
    else:
        items = [_literal(item, indent + 4) for item in value]
        opening, closing = "[", "]"
    one_line = opening + ", ".join(items) + closing
    if indent + len(one_line) <= 88 and "\n" not in one_line:
        return one_line
    inner = " " * (indent + 4)
    return f"{opening}\n{inner}" + f",\n{inner}".join(items) + f",\n{' ' * indent}{closing}"


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    if not arguments:
        return f"attest.{name}()"
    keywords = [f"{key}={_literal(value, 4)}" for key, value in arguments.items()]
    one_line = f"attest.{name}(" + ", ".join(keywords) + ")"
    if len(one_line) <= 70 and "\n" not in one_line:
        return one_line
    return f"attest.{name}(\n" + "".join(f"    {keyword},\n" for keyword in keywords) + ")"


def python_example(request: Request, *, status: int) -> str:
    """The Python that makes ``request`` through ``attest_client``, for an answer of ``status``:
    the answer in ``answer`` (should the call be refused after all, the API's error object
    printed with its status), or the documented refusal's status and code printed."""
    name, arguments = client_call(request)
    call = _call_text(name, arguments)
    if name == "export":
        call = f"list({call})"
    imports = ["import os", ""] if request.authorized else []
    lines = [*imports, "from attest_client import Attest, AttestError", ""]
    credential = f', credential=os.environ["{CREDENTIAL_VARIABLE}"]' if request.authorized else ""
    lines.append(f'attest = Attest("{request.base_url}"{credential})')
    indented = "    " + call.replace("\n", "\n    ")
    if status < 400:
        lines += ["try:", indented.replace("    ", "    answer = ", 1)]
        lines += ["except AttestError as error:", "    print(error.to_dict())"]
    else:
        lines += ["try:", indented, "except AttestError as error:"]
        lines.append("    print(error.status, error.code)")
    return "\n".join(lines)


def add_python_examples(markup: str, *, client_docs: str) -> str:
    """``markup`` with each example's request followed by the same call in Python."""

    def add(found: re.Match[str]) -> str:
        request = parse_curl(html.unescape(found["curl"]))
        code = python_example(request, status=int(found["status"]))
        return (
            f"{found[1]}{found['curl']}{found[3]}\n<p>With the Python client "
            f'(<a href="{client_docs}">attest_client</a>):</p>\n'
            f"<pre data-python>{html.escape(code, quote=False)}</pre>{found['between']}"
        )

    return _EXAMPLE.sub(add, markup)
