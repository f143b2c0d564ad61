"""The human docs pages: each renders with the navigation, every example on it runs against the
real service in process and answers what the page shows, and every figure is the code's.

Examples are marked in the templates: a ``data-example`` block holds ``<pre data-request>``
(the method and path, then the JSON body), ``<code data-status>`` and ``<pre data-response>``.
In a documented answer an object may leave keys out, a string ending in "…" stands for any
string starting with what comes before it, a list ending in "…" for a longer list, and
other values must be the real ones (``data-shape-only``: the same JSON types). A block may
ask for ``data-needs="no-trial"`` or ``data-receipt-from="GET /path"`` (its body's
``receipt`` is then a real one from that answer). Ledger examples ask for
``data-needs="credential"`` (or ``"ledger"``, which also stores the seed's message first):
the blocks of a page then run in order with one new project's credential.
``data-id-from="facts.0.id"`` puts that value of the previous block's answer in place of the
sample fact ID the page shows, and ``data-fill="key=path.0.to"`` sets the body's ``key`` to
that value of the previous answer. URLs of the outside world are served by
a loopback page server. ``data-commands`` blocks are shell sessions: their ``curl`` lines
are fetched from the service and ``python -m receipts.check`` runs for real.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shlex
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import lxml.html
import pytest
from django.core.cache import cache

from attest.registry import limits
from attest_client.check import main as check_main
from attest_core.check_findings import FAILURE_KINDS
from billing.charging import CHARGING_RULES
from billing.pricing import PRICED_ROUTES
from citations.extract.intervals import STATUSES
from tests.citations.conftest import make_ledger
from tests.citations.openapi import assert_matches_schema
from tests.verification.conftest import PageServer, page
from verification.pipeline.batches import MAX_CITATIONS, MAX_QUOTES
from wiring.docs import PAGES
from wiring.docs_client import CREDENTIAL_VARIABLE, parse_curl, python_example
from wiring.docs_tables import served

pytestmark = pytest.mark.django_db

# Pages of the outside world that examples name, served on loopback with these words.
OUTSIDE_PAGES = {
    "https://www.iana.org/help/example-domains": (
        "<html><head><title>Example domains</title></head><body><h1>Example domains</h1>"
        "<p>Some names are kept aside for teaching. These domains may be used as illustrative "
        "examples in documents without asking anyone first.</p></body></html>"
    ),
    "https://en.wikipedia.org/wiki/Grace_Hopper": (
        "<html><head><title>Grace Hopper</title></head><body><h1>Grace Hopper</h1>"
        "<p>In 1944 Hopper was assigned to the Bureau of Ships Computation Project at Harvard "
        "University, where she worked on the Mark I computer.</p></body></html>"
    ),
    "https://www.iana.org/domains/reserved": (
        "<html><head><title>Reserved domains</title></head><body><h1>Reserved domains</h1>"
        "<p>Some names are special-use domain names, kept out of ordinary registration.</p>"
        "</body></html>"
    ),
}
DOCUMENTED_ONLY = "…"


@pytest.fixture(scope="module")
def outside_world():
    server = PageServer().start()
    for url, markup in OUTSIDE_PAGES.items():
        server.routes[urlsplit(url).path] = page(markup)
    yield server
    server.server.shutdown()


@pytest.fixture
def service(outside_world, settings):
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", outside_world.port)})
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1000
    cache.clear()
    yield outside_world
    cache.clear()


def _html(client, path: str) -> lxml.html.HtmlElement:
    response = client.get(path)
    assert response.status_code == 200, path
    assert response["Content-Type"].startswith("text/html")
    return lxml.html.fromstring(response.content.decode())


# The host the test client asks for; every example must name it (docs.base_url).
HOST = "http://testserver"
# The shell variable the ledger examples read the project's credential from.
CREDENTIAL = "$ATTEST_CREDENTIAL"


@dataclass
class CurlCommand:
    method: str
    url: str
    body: str | None
    authorized: bool


def curl_command(text: str) -> CurlCommand:
    """A docs example, read as the shell would read it: one curl command (lines joined at a
    trailing backslash), with only the options the docs use. Anything else fails, so a
    page cannot show a command a reader's shell would run differently."""
    words = shlex.split(text.replace("\\\n", " "))
    assert words[0] == "curl", text
    method, url, body, headers = "GET", None, None, {}
    options = iter(words[1:])
    for word in options:
        if word == "-sS":
            continue
        if word == "-X":
            method = next(options)
        elif word == "-H":
            name, _, value = next(options).partition(": ")
            headers[name] = value
        elif word == "-d":
            body = next(options)
            method = "POST" if method == "GET" else method
        else:
            assert not word.startswith("-") and url is None, f"unexpected {word!r} in {text}"
            url = word
    assert url, text
    if body is not None:
        assert headers.pop("Content-Type") == "application/json", text
        json.loads(body)  # the body is JSON exactly as shown
    authorization = headers.pop("Authorization", None)
    assert authorization in (None, f"Bearer {CREDENTIAL}"), text
    assert not headers, f"unexpected headers {headers} in {text}"
    return CurlCommand(method, url, body, authorization is not None)


@dataclass
class Example:
    method: str
    path: str
    body: str | None
    status: int
    response: object
    shape_only: bool
    needs: str | None
    receipt_from: str | None
    id_from: str | None
    fill: str | None


def _examples(tree: lxml.html.HtmlElement) -> list[Example]:
    found = []
    for block in tree.xpath("//*[@data-example]"):
        command = curl_command(block.xpath(".//*[@data-request]")[0].text_content())
        assert command.url.startswith(f"{HOST}/"), f"{command.url} is not this host's URL"
        assert command.authorized == (block.get("data-needs") in ("credential", "ledger")), (
            f"{command.url}: a Bearer credential on exactly the ledger's examples"
        )
        found.append(
            Example(
                method=command.method,
                path=command.url.removeprefix(HOST),
                body=command.body,
                status=int(block.xpath(".//*[@data-status]")[0].text_content()),
                response=_documented_body(block.xpath(".//*[@data-response]")[0].text_content()),
                shape_only=block.get("data-shape-only") is not None,
                needs=block.get("data-needs"),
                receipt_from=block.get("data-receipt-from"),
                id_from=block.get("data-id-from"),
                fill=block.get("data-fill"),
            )
        )
    return found


def _documented_body(text: str):
    """JSON, or NDJSON shown one object a line (then compared as a list of lines)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.strip().splitlines()]


def _answered_body(response):
    if response.get("Content-Type", "").startswith("application/x-ndjson"):
        body = b"".join(response.streaming_content).decode()
        return [json.loads(line) for line in body.splitlines()]
    return response.json()


def _same_type(documented, real) -> bool:
    if documented is None:
        return True
    if isinstance(documented, bool) or isinstance(real, bool):
        return isinstance(documented, bool) and isinstance(real, bool)
    if isinstance(documented, int | float):
        return isinstance(real, int | float)
    return type(documented) is type(real)


def assert_documented(documented, real, where: str, shape_only: bool) -> None:
    """``real`` answers at least what ``documented`` shows, by the rules in the docstring."""
    if isinstance(documented, dict):
        assert isinstance(real, dict), f"{where} is documented as an object"
        for key, value in documented.items():
            assert key in real, f"{where}.{key} is documented but not answered"
            assert_documented(value, real[key], f"{where}.{key}", shape_only)
    elif isinstance(documented, list):
        assert isinstance(real, list), f"{where} is documented as a list"
        shown = documented
        if documented and documented[-1] == DOCUMENTED_ONLY:
            shown = documented[:-1]
            assert len(real) >= len(shown), f"{where} has fewer items than documented"
        elif not shape_only:
            assert len(real) == len(shown), f"{where} has {len(real)} items, documented {shown}"
        for index, (item, answered) in enumerate(zip(shown, real, strict=False)):
            assert_documented(item, answered, f"{where}[{index}]", shape_only)
    elif isinstance(documented, str) and documented.endswith(DOCUMENTED_ONLY):
        assert isinstance(real, str) and real.startswith(documented[:-1]), (
            f"{where} is {real!r}, documented as {documented!r}"
        )
    elif shape_only:
        assert _same_type(documented, real), f"{where} is {real!r}, documented as {documented!r}"
    else:
        assert documented == real and _same_type(documented, real), (
            f"{where} is {real!r}, documented as {documented!r}"
        )


# The fact ID the ledger pages show; the harness puts a real one in its place.
SAMPLE_FACT_ID = "4b7f0c1e-2d9a-4e3b-8f61-0a5c9e2d7b14"


def _outside_to_loopback(value, server: PageServer):
    """Every URL of the outside world in a request body, pointed at the loopback copy."""
    if isinstance(value, dict):
        return {key: _outside_to_loopback(item, server) for key, item in value.items()}
    if isinstance(value, list):
        return [_outside_to_loopback(item, server) for item in value]
    if isinstance(value, str) and value in OUTSIDE_PAGES:
        return server.url(urlsplit(value).path)
    return value


def _value_at(answer, dotted: str):
    for part in dotted.split("."):
        answer = answer[int(part)] if isinstance(answer, list) else answer[part]
    return answer


def _run_example(
    api, settings, server: PageServer, example: Example, *, ledger=None, previous=None
):
    client = api
    if example.needs in ("credential", "ledger"):
        client = ledger.client
    path, body = _request_as_run(api, settings, server, example, previous=previous)
    if body is None:
        return client.generic(example.method, path)
    return client.generic(example.method, path, json.dumps(body), content_type="application/json")


def _request_as_run(api, settings, server: PageServer, example: Example, *, previous=None):
    """The path and body an example sends once its preconditions, fills and loopback pages
    are applied (the body None when it has none)."""
    if example.needs == "no-trial":
        settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    else:
        assert example.needs in (None, "credential", "ledger"), (
            f"unknown precondition {example.needs}"
        )
    path, raw_body = example.path, example.body
    if example.id_from:
        real_id = _value_at(previous, example.id_from)
        path = path.replace(SAMPLE_FACT_ID, real_id)
        raw_body = raw_body and raw_body.replace(SAMPLE_FACT_ID, real_id)
    if raw_body is None:
        return path, None
    body = json.loads(raw_body)
    if example.receipt_from:
        method, receipt_path = example.receipt_from.split(" ", 1)
        body["receipt"] = api.generic(method, receipt_path).json()["receipt"]
    if example.fill:
        key, _, dotted = example.fill.partition("=")
        *inside, last = key.split(".")  # "evidence.0.receipt" fills a nested value
        target = _value_at(body, ".".join(inside)) if inside else body
        target[int(last) if isinstance(target, list) else last] = _value_at(previous, dotted)
    return path, _outside_to_loopback(body, server)


# --- rendering and navigation ---------------------------------------------------------------


@pytest.mark.parametrize("doc", PAGES, ids=[doc.slug for doc in PAGES])
def test_every_docs_page_renders_with_the_navigation(client, doc):
    tree = _html(client, f"/docs/{doc.slug}")
    assert tree.findtext(".//h1") == doc.title
    nav = tree.xpath("//nav[@class='docs']")[0]
    links = [a.get("href") for a in nav.iter("a")]
    assert links == ["/", "/docs", *[f"/docs/{p.slug}" for p in PAGES], "/docs/api"]
    assert [a.get("href") for a in nav.xpath(".//a[@aria-current='page']")] == [f"/docs/{doc.slug}"]


def test_the_docs_index_lists_every_page(client):
    tree = _html(client, "/docs")
    listed = [a.get("href") for a in tree.xpath("//article//table//a")]
    assert [f"/docs/{p.slug}" for p in PAGES] == listed[: len(PAGES)]


def test_the_landing_page_links_the_docs(client):
    hrefs = {a.get("href") for a in _html(client, "/").iter("a")}
    assert {"/docs", "/docs/verify-quote", "/docs/receipt-check", "/docs/payments"} <= hrefs


def test_every_link_on_the_docs_leads_somewhere(client):
    hrefs = set()
    for path in ["/", "/docs", *[f"/docs/{p.slug}" for p in PAGES]]:
        hrefs |= {a.get("href") for a in _html(client, path).iter("a")}
    internal = sorted(href for href in hrefs if href.startswith("/"))
    assert len(internal) > len(PAGES) + 3
    for href in internal:
        assert client.get(href).status_code == 200, href


def test_docs_pages_only_answer_reads(client):
    assert client.post("/docs/limits").status_code == 405


# --- every example runs ---------------------------------------------------------------------

WITH_EXAMPLES = [
    "verify-quote",
    "verify-quotes",
    "verify-citations",
    "fetch",
    "receipt-verify",
    "payments",
    "ledger/ingest",
    "ledger/recall",
    "ledger/resolve",
    "ledger/rebuilds",
    "ledger/erasures",
    "ledger/subject-export",
    "ledger/retraction",
    "ledger/authored-records",
    "ledger/web-evidence",
    "ledger/predicates",
    "ledger/record-inventory",
    "ledger/changes",
    "ledger/subjects",
]


@pytest.fixture(scope="module")
def published_schema():
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _schema_path(schema: dict, path: str) -> str:
    """The schema's path template a concrete path is an instance of."""
    path = urlsplit(path).path
    for template in schema["paths"]:
        if re.fullmatch(re.sub(r"\{[^/]+\}", "[^/]+", template), path):
            return template
    raise AssertionError(f"{path} is no route of the schema")


def _holds_to_the_schema(schema: dict, method: str, path: str, response) -> None:
    """A JSON answer is what the schema documents: no key it does not declare, every key it
    requires, each of its type."""
    if response.get("Content-Type", "").startswith("application/json"):
        assert_matches_schema(schema, _schema_path(schema, path), method.lower(), response)


@pytest.mark.parametrize("slug", WITH_EXAMPLES)
def test_every_example_on_the_page_answers_what_it_shows(
    api, client, settings, service, slug, published_schema
):
    examples = _examples(_html(client, f"/docs/{slug}"))
    assert examples, f"/docs/{slug} shows no example"
    ledger, previous = make_ledger(), None
    if any(e.needs == "ledger" for e in examples):
        # The lifecycle pages start from the seed's message: user-1 said it in m1.
        ledger.ingest("user-1", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    for example in examples:
        response = _run_example(api, settings, service, example, ledger=ledger, previous=previous)
        previous = _answered_body(response)
        where = f"{example.method} {example.path} on /docs/{slug}"
        assert response.status_code == example.status, (
            where,
            getattr(response, "content", b"")[:500],
        )
        _holds_to_the_schema(published_schema, example.method, example.path, response)
        documented = _outside_to_loopback(example.response, service)
        assert_documented(documented, previous, where, example.shape_only)
        settings.ATTEST_TRIAL_CALLS_PER_DAY = 1000


@pytest.fixture
def in_process_http():
    """An httpx client whose transport is this process's WSGI application."""
    import httpx
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    # As django.test.Client does: both signals would close a connection that is inside the
    # test's transaction (its autocommit is off), and PostgreSQL's test data with it.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        with httpx.Client(transport=httpx.WSGITransport(app=WSGIHandler())) as http:
            yield http
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _run_python(code: str, http) -> tuple[dict, str]:
    """Run a page's Python example here, its client's HTTP going to this process's service."""
    constructor = f'Attest("{HOST}"'
    assert code.count(constructor) == 1, code
    namespace: dict = {"_http": http}
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(code.replace(constructor, f"{constructor}, http=_http"), namespace)
    return namespace, printed.getvalue().strip()


# The raw WSGI handler (not Django's test client) may close the connection between calls,
# which on PostgreSQL would end a test transaction: there these tests commit, as a server
# would. On SQLite they stay in the test's transaction (its append-only audit table cannot
# be flushed after a committing test).
_COMMITS = os.environ.get("DATABASE_URL", "").startswith("postgres")


@pytest.mark.django_db(transaction=_COMMITS)
@pytest.mark.parametrize("slug", WITH_EXAMPLES)
def test_every_example_runs_through_the_python_client_as_the_page_shows(
    api, client, settings, service, in_process_http, monkeypatch, slug
):
    """Beside each curl command the page shows the same call through attest_client; run
    (with the same fills and loopback pages as the curl harness), it answers the same."""
    tree = _html(client, f"/docs/{slug}")
    blocks, examples = tree.xpath("//*[@data-example]"), _examples(tree)
    ledger, previous = make_ledger(), None
    monkeypatch.setenv(CREDENTIAL_VARIABLE, ledger.token)
    if any(e.needs == "ledger" for e in examples):
        ledger.ingest("user-1", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    for block, example in zip(blocks, examples, strict=True):
        where = f"the Python of {example.method} {example.path} on /docs/{slug}"
        shown = parse_curl(block.xpath(".//*[@data-request]")[0].text_content())
        [python] = block.xpath(".//*[@data-python]")
        assert python.text_content() == python_example(shown, status=example.status), where
        path, body = _request_as_run(api, settings, service, example, previous=previous)
        split = urlsplit(path)
        run = dataclasses.replace(shown, path=split.path, query=parse_qsl(split.query), body=body)
        namespace, printed = _run_python(
            python_example(run, status=example.status), in_process_http
        )
        if example.status < 400:
            assert "answer" in namespace and printed == "", (where, printed)
            previous = namespace["answer"]
            documented = _outside_to_loopback(example.response, service)
            assert_documented(documented, previous, where, example.shape_only)
        else:
            assert printed == f"{example.status} {example.response['error']['code']}", where
            previous = None
        settings.ATTEST_TRIAL_CALLS_PER_DAY = 1000


def test_every_page_of_a_route_shows_examples():
    routes = [doc.slug for doc in PAGES if doc.route]
    assert len(routes) >= 8 and set(routes) <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("doc", [d for d in PAGES if d.route], ids=lambda d: d.slug)
def test_a_route_page_lists_every_error_status_the_schema_documents(client, doc):
    from drf_spectacular.generators import SchemaGenerator

    method, path = doc.route.split(" ", 1)
    schema = SchemaGenerator().get_schema(request=None, public=True)
    documented = {int(s) for s in schema["paths"][path][method.lower()]["responses"]}
    listed = {int(row[0]) for row in _rows(_html(client, f"/docs/{doc.slug}"), "status")}
    assert {s for s in documented if s >= 400} <= listed


def test_the_fill_and_credential_harness_uses_the_previous_answer():
    assert _value_at({"facts": [{"id": "x"}]}, "facts.0.id") == "x"
    with pytest.raises(KeyError):
        _value_at({"facts": [{"id": "x"}]}, "facts.0.fact")


def test_the_harness_catches_an_answer_the_docs_do_not_show():
    real = {"result": {"match": "fuzzy", "score": 0.9}, "tier": "sample", "list": [1, 2]}
    assert_documented({"result": {"match": "fuzzy"}, "list": [1, "…"]}, real, "a", False)
    assert_documented({"tier": "sam…"}, real, "a", False)
    for wrong in (
        {"result": {"match": "exact"}},
        {"result": {"verdict": "fuzzy"}},
        {"tier": "paid…"},
        {"list": [1]},
        {"result": {"score": "0.9"}},
    ):
        with pytest.raises(AssertionError):
            assert_documented(wrong, real, "a", False)
    assert_documented({"result": {"match": "exact"}, "list": [7]}, real, "a", True)
    with pytest.raises(AssertionError):
        assert_documented({"result": {"score": "high"}}, real, "a", True)


def test_the_offline_checker_examples_run_as_shown(client, tmp_path, monkeypatch):
    blocks = _html(client, "/docs/receipt-check").xpath("//*[@data-commands]")
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        _run_commands_as_shown(block, client, tmp_path)


@pytest.mark.django_db(transaction=_COMMITS)
def test_the_offline_checker_page_checks_with_the_python_client_as_shown(client, in_process_http):
    [block] = _html(client, "/docs/receipt-check").xpath("//*[@data-client='python']")
    code = block.xpath(".//*[@data-code]")[0].text_content()
    _, printed = _run_python(code, in_process_http)
    assert printed == block.xpath(".//*[@data-output]")[0].text_content().strip() != ""


def _run_commands_as_shown(block, client, tmp_path, jq=None) -> None:
    """Run a docs block's shell lines (curl, jq, the offline checker) here, in process, and
    hold the checker's exit status and output to what the block shows. ``jq`` writes
    what a jq line would, from its words."""
    code = out = None
    for line in block.xpath(".//*[@data-run]")[0].text_content().strip().splitlines():
        words = shlex.split(line)
        if words[0] == "curl":
            assert words[-2] == ">", line
            (tmp_path / words[-1]).write_bytes(client.get(urlsplit(words[-3]).path).content)
        elif words[0] == "jq" and jq is not None:
            jq(words)
        else:
            assert words[:3] == ["python", "-m", "receipts.check"], line
            stdout = io.StringIO()
            code, out = check_main(words[3:], stdout=stdout), stdout.getvalue()
    assert code == int(block.xpath(".//*[@data-exit]")[0].text_content())
    lines = out.splitlines()
    for shown in block.xpath(".//*[@data-output]")[0].text_content().splitlines():
        if shown.endswith(DOCUMENTED_ONLY):
            assert any(line.startswith(shown[:-1]) for line in lines), (shown, out)
        else:
            assert shown in lines, (shown, out)


def test_the_web_evidence_walkthrough_ends_in_an_offline_check_of_the_resolved_receipt(
    api, client, settings, service, tmp_path, monkeypatch
):
    tree = _html(client, "/docs/ledger/web-evidence")
    ledger, resolved = make_ledger(), None
    for example in _examples(tree):
        response = _run_example(api, settings, service, example, ledger=ledger, previous=resolved)
        assert response.status_code == example.status
        resolved = _answered_body(response)
    [web] = [row for row in resolved["evidence"] if row["source"] == "web"]
    monkeypatch.chdir(tmp_path)
    [block] = tree.xpath("//*[@data-commands]")

    def receipt_of_resolved(words: list[str]) -> None:
        # jq -r '.evidence[1].receipt' resolved.json > receipt.jws, on the real answer
        assert words[2] == ".evidence[1].receipt" and resolved["evidence"][1] == web
        (tmp_path / words[-1]).write_text(web["receipt"] + "\n", encoding="utf-8")

    _run_commands_as_shown(block, client, tmp_path, jq=receipt_of_resolved)


# --- figures come from the code -------------------------------------------------------------


def _rows(tree: lxml.html.HtmlElement, header: str) -> list[list[str]]:
    """The body rows of every table whose first header cell is ``header``."""
    rows = [
        [td.text_content().strip() for td in row.xpath("./td")]
        for table in tree.xpath(f"//table[.//th[1][text()='{header}']]")
        for row in table.xpath(".//tr[td]")
    ]
    assert rows, f"no table headed {header!r}"
    return rows


def test_the_limits_page_reads_each_figure_from_the_running_configuration(client, settings):
    settings.ATTEST_FETCH_DEADLINE = 7.5
    settings.ATTEST_FETCH_MAX_BYTES = 2 * 1024 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 9
    settings.ATTEST_LEDGER_RATE = "30/5m"
    settings.ATTEST_EDGE = True
    rows = {row[0]: row for row in _rows(_html(client, "/docs/limits"), "limit")}
    assert rows["Whole fetch (every redirect hop and body read)"][1:] == [
        "7.5 s",
        "content_kind timeout: a charged result",
        "ATTEST_FETCH_DEADLINE",
    ]
    assert rows["Decoded page body"][1] == "2 MiB (2,097,152 bytes)"
    assert rows["Request body"][1:3] == [
        "1 MiB (1,048,576 bytes)",
        "413 request_too_large, not charged",
    ]
    assert rows["Free trial calls per caller IP per UTC day"][1] == "9"
    assert rows["Requests per credential"][1] == "30 per 5 minutes"
    assert rows["Edge mode"][1:3] == ["on", "when on, any PDF: 501 not_on_edge, not charged"]
    assert rows["URL length"][1:] == ["2,048 characters", "400 invalid_request, not charged", ""]


def test_the_limits_page_shows_every_limit_the_table_holds(client):
    shown = {row[0]: row[1] for row in _rows(_html(client, "/docs/limits"), "limit")}
    expected = {limit.what: limit.value for _, group in limits() for limit in group}
    assert shown == expected
    assert shown["Fuzzy work per call (quote length times page length)"] == "10,000,000,000 units"


def test_the_price_table_lists_exactly_the_priced_routes_this_service_serves(client):
    rows = _rows(_html(client, "/docs/payments"), "route")
    listed = [row[0].removeprefix("POST ") for row in rows]
    assert listed == [f"/v1/{name}" for name in PRICED_ROUTES if served(f"/v1/{name}")]
    assert rows[0][:3] == ["POST /v1/verify/quote", "US$0.01", "10000"]


def test_the_charging_table_is_the_code_table(client):
    rows = _rows(_html(client, "/docs/payments"), "outcome")
    assert rows == [
        [rule.outcome, str(rule.status), rule.code or "—", "yes" if rule.charged else "no"]
        for rule in CHARGING_RULES
    ]


@pytest.mark.parametrize("slug", [s for s in WITH_EXAMPLES if s != "payments"] + ["payments"])
def test_every_error_a_page_lists_says_its_status_code_and_charge(client, slug):
    rows = _rows(_html(client, f"/docs/{slug}"), "status")
    assert rows
    charged = {rule.code: rule.charged for rule in CHARGING_RULES if rule.code}
    for status, code, is_charged, when in rows:
        assert 400 <= int(status) < 600 and re.fullmatch(r"[a-z_]+", code) and when
        assert is_charged == ("yes" if charged.get(code) else "no")


def test_the_exit_status_table_is_the_checkers(client):
    rows = _rows(_html(client, "/docs/receipt-check"), "status")
    assert rows[0][0] == "0"
    assert rows[1:] == [[str(k.exit_code), k.name, k.meaning] for k in FAILURE_KINDS]


def test_the_fact_status_table_lists_every_status_the_ledger_derives(client):
    rows = _rows(_html(client, "/docs/ledger/recall"), "fact status")
    assert [row[0] for row in rows] == list(STATUSES)
    assert all(row[1] for row in rows)


def test_the_batch_pages_state_the_batch_sizes_of_the_code(client):
    quotes = _rows(_html(client, "/docs/verify-quotes"), "field")
    assert dict((row[0], row[2]) for row in quotes)["quotes"].startswith(f"1 to {MAX_QUOTES} ")
    citations = _rows(_html(client, "/docs/verify-citations"), "field")
    assert dict((r[0], r[2]) for r in citations)["citations"].startswith(f"1 to {MAX_CITATIONS} ")


def test_each_page_links_the_previous_and_the_next_in_navigation_order(client):
    for index, doc in enumerate(PAGES):
        tree = _html(client, f"/docs/{doc.slug}")
        previous = tree.xpath("//nav[@class='pager']//a[@rel='prev']/@href")
        following = tree.xpath("//nav[@class='pager']//a[@rel='next']/@href")
        assert previous == ([f"/docs/{PAGES[index - 1].slug}"] if index else [])
        assert following == ([f"/docs/{PAGES[index + 1].slug}"] if index + 1 < len(PAGES) else [])


def test_the_navigation_groups_pages_under_their_headings(client):
    nav = _html(client, "/docs/fetch").xpath("//nav[@class='docs']")[0]
    shown = {
        group.findtext("span[@class='group-name']"): [a.get("href") for a in group.iter("a")]
        for group in nav.xpath("span[@class='group']")
    }
    assert shown["Fact ledger"] == [f"/docs/{d.slug}" for d in PAGES if d.group == "Fact ledger"]
    assert shown["Fact ledger"][:3] == [
        "/docs/ledger/ingest",
        "/docs/ledger/recall",
        "/docs/ledger/resolve",
    ]
    assert "/docs/fetch" in shown["Verification"]


REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_the_readme_links_every_docs_page():
    linked = set(re.findall(r"\]\(http://127\.0\.0\.1:8000(/docs/[a-z/-]+)\)", README))
    assert linked == {f"/docs/{doc.slug}" for doc in PAGES}


# The README and the guides beside it (docs/*.md, bench/README.md, CHANGELOG.md).
MARKDOWN = sorted(
    [
        REPO / "README.md",
        REPO / "CHANGELOG.md",
        REPO / "bench" / "README.md",
        *(REPO / "docs").glob("*.md"),
    ]
)


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda path: str(path.relative_to(REPO)))
def test_the_readme_and_guides_name_only_routes_that_run(doc):
    text = doc.read_text()
    # Our own paths, however written: `POST /v1/...`, `/v1/...`, or a link to the service.
    ours = r"/(?:v1|docs|\.well-known|healthz)[^`\s?)…]*"
    named = set(re.findall(rf"`(?:(?:GET|POST) )?({ours})", text))
    named |= set(re.findall(r"\(http://127\.0\.0\.1:8000(/[^)\s]*)\)", text))
    for path in sorted(p for p in named if not p.endswith("/")):  # "/v1/…" is a prefix
        concrete = re.sub(r"\{[^}]+\}", "1", path)  # "1" fits every path converter
        assert served(concrete), f"{doc.name} names {path}, which this service does not serve"


# --- how it works, and llms.txt ---------------------------------------------------------------


def test_how_it_works_lists_every_content_kind_with_its_advice_and_signals(client):
    from verification.engine.classify import ADVICE, CONTENT_KINDS, SIGNAL_ADVICE

    rows = _rows(_html(client, "/docs/how-it-works"), "content_kind")
    assert [row[0] for row in rows] == list(CONTENT_KINDS)
    for kind, signals, advice in rows:
        # The kind's advice, then the advice that replaces it for a signal of its own.
        special = "".join(
            f"With {name}: {text}" for name, text in SIGNAL_ADVICE.items() if name in signals
        )
        assert advice == ADVICE[kind] + special and signals, kind
    assert "With host_not_found: " in rows[1][2]


def test_every_signal_how_it_works_names_is_one_the_code_writes():
    from wiring.docs_guide import PDF_SIGNALS, SIGNALS

    source = "".join(
        path.read_text()
        for path in (Path(__file__).resolve().parents[2] / "verification").rglob("*.py")
    )
    named = [name for rows in SIGNALS.values() for name, _ in rows] + [n for n, _ in PDF_SIGNALS]
    assert len(named) > 25
    for name in named:
        if not name.startswith("status_"):
            assert f'"{name}"' in source, f"{name} is documented but no code writes it"


def test_how_it_works_shows_what_the_normaliser_makes_of_each_input(client):
    from attest_core.normalise import normalise

    rows = _rows(_html(client, "/docs/how-it-works"), "step")
    shown = {row[1]: row[2] for row in rows}
    assert shown["co[U+00AD]oper[U+200B]ation"] == "cooperation"
    assert shown["[U+201C]it[U+2019]s[U+201D]"] == '"it\'s"'
    assert shown["1990[U+2013]2000 [U+2014] [U+2212]5"] == "1990-2000 - -5"
    assert normalise("\ufb01nal \uff12025").text == shown["[U+FB01]nal [U+FF12]025"] == "final 2025"


def test_the_pages_about_verdicts_link_how_it_works(client):
    for path in ("/docs", "/docs/verify-quote", "/docs/fetch"):
        assert "/docs/how-it-works" in {a.get("href") for a in _html(client, path).iter("a")}


def test_llms_txt_indexes_every_docs_page_the_schema_and_the_samples(client):
    response = client.get("/llms.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    text = response.content.decode()
    lines = text.splitlines()
    assert lines[0] == "# Attest" and lines[2].startswith("> ")
    links = re.findall(r"^- \[([^\]]+)\]\((http://testserver(/[^)]*))\): \S", text, re.M)
    # Every line of a section is one link with its description.
    assert len(links) == sum(line.startswith("- ") for line in lines)
    paths = [path for _, _, path in links]
    assert {f"/docs/{doc.slug}" for doc in PAGES} | {"/docs", "/v1/openapi.json"} <= set(paths)
    assert {"/v1/sample/quote", "/v1/sample/citations", "/v1/sample/page"} <= set(paths)
    for path in paths:
        assert client.get(path).status_code == 200, path
    assert client.post("/llms.txt").status_code == 405


def test_llms_txt_names_the_host_that_asked(client, settings):
    settings.ALLOWED_HOSTS = ["attest.example"]
    text = client.get("/llms.txt", HTTP_HOST="attest.example").content.decode()
    assert "(http://attest.example/docs/how-it-works)" in text


# --- the payments page's clients pay, run as shown --------------------------------------------

NODE_PACKAGES = Path(__file__).resolve().parents[1] / "node"


def _client_block(live_server, language: str) -> tuple[str, list[str]]:
    """The payments page's client code, as the live server serves it (so its base URL is the
    live server's), and the output the page says it prints."""
    import httpx

    markup = httpx.get(f"{live_server.url}/docs/payments", timeout=30).text
    [block] = lxml.html.fromstring(markup).xpath(f"//*[@data-client='{language}']")
    code = block.xpath(".//*[@data-code]")[0].text_content()
    assert f'"{live_server.url}"' in code, "the client calls the host serving the page"
    return code, block.xpath(".//*[@data-output]")[0].text_content().splitlines()


def _run_client(command: list[str], cwd: Path) -> list[str]:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PAYER_KEY"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def serve_the_demo_page_locally(live_server, settings) -> None:
    """The live server as `ATTEST_FETCH_ALLOW=host:port make run` serves it: its own demo
    page, under its own URL, is a page it may fetch."""
    parts = urlsplit(live_server.url)
    settings.ATTEST_PUBLIC_URL = live_server.url
    settings.ATTEST_FETCH_ALLOW = frozenset({(parts.hostname, parts.port)})


def _pays(live_server, service, settings, tmp_path, language, filename, command):
    from billing.models import LocalTransfer

    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0  # every call pays
    serve_the_demo_page_locally(live_server, settings)
    code, shown = _client_block(live_server, language)
    assert f'"{live_server.url}/v1/sample/page"' in code, "it cites this service's demo page"
    (tmp_path / filename).write_text(code, encoding="utf-8")
    assert _run_client([*command, filename], tmp_path) == shown == ["200 paid exact", "settled"]
    # Paid through the built-in local facilitator, with a key made on the spot.
    assert LocalTransfer.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_python_client_on_the_payments_page_pays(live_server, service, settings, tmp_path):
    import sys

    _pays(live_server, service, settings, tmp_path, "python", "pay.py", [sys.executable])


@pytest.mark.django_db(transaction=True)
def test_the_node_client_on_the_payments_page_pays(live_server, service, settings, tmp_path):
    import shutil

    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed (.ci/run installs them with apt-get)")
    assert (NODE_PACKAGES / "node_modules" / "@x402" / "fetch").is_dir(), (
        "the client's packages are missing: `make test` installs them (npm ci --prefix tests/node)"
    )
    (tmp_path / "node_modules").symlink_to(NODE_PACKAGES / "node_modules")
    _pays(live_server, service, settings, tmp_path, "node", "pay.mjs", ["node"])


@pytest.mark.django_db(transaction=True)
def test_the_discovery_example_on_the_payments_page_reads_the_bazaar_extension(
    live_server, service, settings, tmp_path
):
    import sys

    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0  # the offer is what the example reads
    serve_the_demo_page_locally(live_server, settings)
    code, shown = _client_block(live_server, "discovery")
    (tmp_path / "discover.py").write_text(code, encoding="utf-8")
    assert _run_client([sys.executable, "discover.py"], tmp_path) == shown
    assert shown == ["402 True POST", "['quote', 'url']"]


def test_the_payments_page_says_a_fresh_key_pays_and_how_to_raise_the_trial(client):
    text = _html(client, "/docs/payments").text_content()
    assert "No testnet USDC is needed" in text and "treats any payer as funded" in text
    assert "ATTEST_TRIAL_CALLS_PER_DAY=1000 make run" in text
    assert 'pip install "x402[evm,httpx]"' in text and "npm install @x402/fetch" in text


def test_a_402_message_links_the_payments_docs(api, client, settings, service):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.ATTEST_PUBLIC_URL = "https://attest.example"
    url = service.url("/help/example-domains")
    response = api.post("/v1/verify/quote", {"url": url, "quote": "x y z"}, format="json")
    assert response.status_code == 402
    message = response.json()["error"]["message"]
    assert message.endswith(" https://attest.example/docs/payments"), message
    assert client.get("/docs/payments").status_code == 200


# Every block of code on a page is one of these: a command the tests run (data-request in a
# data-example, data-run in data-commands, data-code in a client), what it answers (data-response,
# data-output), or a fragment of an answer shown above (data-fragment): none escapes the tests.
PRE_KINDS = {
    "data-request",
    "data-python",
    "data-response",
    "data-run",
    "data-output",
    "data-code",
}


@pytest.mark.parametrize("doc", PAGES, ids=[doc.slug for doc in PAGES])
def test_every_block_of_code_on_a_page_is_run_or_shows_an_answer(client, doc):
    for pre in _html(client, f"/docs/{doc.slug}").iter("pre"):
        kinds = set(pre.attrib) & (PRE_KINDS | {"data-fragment"})
        assert len(kinds) == 1, (doc.slug, pre.text_content()[:80])
        if "data-fragment" in kinds:
            assert not re.match(r"\s*(curl|GET|POST|python|node)\b", pre.text_content())
