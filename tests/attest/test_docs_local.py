"""Every docs page whose examples read pages on the internet also shows the same call on the
service's own demo page ("On this machine", ``data-local``), and each of those runs, as shown,
against a live server that may fetch itself (`ATTEST_FETCH_ALLOW=host:port make run`): the
curl command and its Python twin answer what the page shows. Without the allowance the call
is refused, and the page's Python and its payment clients print the API's error object
instead of failing on a missing field."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from urllib.parse import urlsplit

import httpx
import lxml.html
import pytest
from django.core.cache import cache
from eth_account import Account

from tests.attest.test_docs import (
    NODE_PACKAGES,
    _client_block,
    _documented_body,
    _run_client,
    assert_documented,
    curl_command,
    serve_the_demo_page_locally,
)
from tests.live_service import ROOT
from wiring.docs import PAGES

# The pages whose examples read a page on the internet, each with its local variant.
LOCAL = [
    "verify-quote",
    "verify-quotes",
    "verify-citations",
    "fetch",
    "payments",
    "ledger/web-evidence",
]
# A URL in an example: its host, unless it is the host serving the page.
URL_HOST = re.compile(r"\b[a-z]+://([^/\s'\"]+)")


def _page(base: str, slug: str) -> lxml.html.HtmlElement:
    response = httpx.get(f"{base}/docs/{slug}", timeout=30, trust_env=False)
    assert response.status_code == 200, slug
    return lxml.html.fromstring(response.text)


def _hosts(tree: lxml.html.HtmlElement, xpath: str) -> set[str]:
    return {host for pre in tree.xpath(xpath) for host in URL_HOST.findall(pre.text_content())}


@pytest.fixture
def local_server(live_server, settings):
    serve_the_demo_page_locally(live_server, settings)
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1000
    cache.clear()
    yield live_server
    cache.clear()


@pytest.mark.django_db(transaction=True)
def test_every_page_whose_examples_reach_the_internet_shows_a_local_variant(local_server):
    own = urlsplit(local_server.url).netloc
    reaching, with_variant = set(), set()
    for doc in PAGES:
        tree = _page(local_server.url, doc.slug)
        if _hosts(tree, "//*[@data-example]//pre[@data-request]") - {own}:
            reaching.add(doc.slug)
        # The local variants and the clients that run as shown name this service alone.
        assert _hosts(tree, "//*[@data-local]//pre | //*[@data-client]//pre") <= {own}, doc.slug
        if tree.xpath("//*[@data-local]"):
            with_variant.add(doc.slug)
            allowing = {code.text_content() for code in tree.xpath("//code")}
            assert f"ATTEST_FETCH_ALLOW={own} make run" in allowing, doc.slug
    assert reaching == with_variant == set(LOCAL)


def _run_python(code: str) -> tuple[dict, str]:
    """A page's Python twin, run here: its client speaks HTTP to the live server."""
    namespace: dict = {}
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(code, namespace)
    return namespace, printed.getvalue().strip()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("slug", LOCAL)
def test_each_local_variant_answers_what_it_shows_on_a_live_server(local_server, settings, slug):
    blocks = _page(local_server.url, slug).xpath("//*[@data-local]")
    assert blocks, f"/docs/{slug} has no local variant"
    for block in blocks:
        settings.ATTEST_TRIAL_CALLS_PER_DAY = 0 if block.get("data-needs") == "no-trial" else 1000
        cache.clear()
        command = curl_command(block.xpath(".//pre[@data-request]")[0].text_content())
        assert command.url.startswith(f"{local_server.url}/") and not command.authorized
        status = int(block.xpath(".//*[@data-status]")[0].text_content())
        documented = _documented_body(block.xpath(".//pre[@data-response]")[0].text_content())
        where = f"the local variant on /docs/{slug}"

        response = httpx.request(
            command.method,
            command.url,
            content=command.body,
            headers={"Content-Type": "application/json"} if command.body else None,
            timeout=60,
            trust_env=False,
        )
        assert response.status_code == status, (where, response.text[:500])
        assert_documented(documented, response.json(), where, False)

        [python] = block.xpath(".//pre[@data-python]")
        namespace, printed = _run_python(python.text_content())
        if status < 400:
            assert printed == "" and "answer" in namespace, (where, printed)
            assert_documented(documented, namespace["answer"], f"the Python of {where}", False)
        else:
            assert printed == f"{status} {documented['error']['code']}", (where, printed)


BLOCKED = {"code": "blocked", "reason": "loopback"}


def _blocked(error: dict) -> dict:
    return {"code": error["code"], "reason": error["details"]["reason"]}


@pytest.mark.django_db(transaction=True)
def test_without_the_allowance_the_python_prints_the_error_object(local_server, settings):
    settings.ATTEST_FETCH_ALLOW = frozenset()
    [block] = _page(local_server.url, "verify-quote").xpath("//*[@data-local]")
    namespace, printed = _run_python(block.xpath(".//pre[@data-python]")[0].text_content())
    assert "answer" not in namespace
    error = ast.literal_eval(printed)  # the error object, as AttestError.to_dict() gives it
    assert error["status"] == 403 and _blocked(error["error"]) == BLOCKED


@pytest.mark.django_db(transaction=True)
def test_without_the_allowance_the_payment_clients_print_the_error_object(
    local_server, settings, tmp_path
):
    """Offline, `pay.py` died with KeyError: 'tier'; now both clients print the refusal."""
    settings.ATTEST_FETCH_ALLOW = frozenset()
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    code, _ = _client_block(local_server, "python")
    (tmp_path / "pay.py").write_text(code, encoding="utf-8")
    [line] = _run_client([sys.executable, "pay.py"], tmp_path)
    status, _, error = line.partition(" ")
    assert status == "403" and _blocked(ast.literal_eval(error)) == BLOCKED

    code, _ = _client_block(local_server, "discovery")
    (tmp_path / "discover.py").write_text(code, encoding="utf-8")
    [line] = _run_client([sys.executable, "discover.py"], tmp_path)
    status, _, error = line.partition(" ")
    assert status == "403" and _blocked(ast.literal_eval(error)) == BLOCKED

    if not (shutil.which("node") and (NODE_PACKAGES / "node_modules").is_dir()):
        pytest.skip("node and tests/node's packages are not installed (make test installs them)")
    (tmp_path / "node_modules").symlink_to(NODE_PACKAGES / "node_modules")
    code, _ = _client_block(local_server, "node")
    (tmp_path / "pay.mjs").write_text(code, encoding="utf-8")
    [line] = _run_client(["node", "pay.mjs"], tmp_path)
    status, _, error = line.partition(" ")
    assert status == "403" and _blocked(json.loads(error)) == BLOCKED


def _billing_guide_client() -> str:
    """The Python block under "Paying from Python" in docs/billing.md."""
    text = (ROOT / "docs" / "billing.md").read_text()
    section = text[text.index("## Paying from Python") :]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def _run_guide_client(server, tmp_path) -> list[str]:
    env = dict(os.environ, ATTEST_URL=server.url, PAYER_KEY=Account.create().key.hex())
    (tmp_path / "guide_pay.py").write_text(_billing_guide_client(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "guide_pay.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


@pytest.mark.django_db(transaction=True)
def test_the_billing_guides_client_pays_for_the_demo_page_and_prints_a_refusal(
    local_server, settings, tmp_path
):
    from billing.models import LocalTransfer

    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    status, answer = _run_guide_client(local_server, tmp_path)
    assert status.startswith("200 ") and status != "200 None"  # PAYMENT-RESPONSE came back
    paid = ast.literal_eval(answer)
    assert paid["tier"] == "paid" and paid["result"]["match"] == "exact"
    assert LocalTransfer.objects.count() == 1

    settings.ATTEST_FETCH_ALLOW = frozenset()
    status, answer = _run_guide_client(local_server, tmp_path)
    assert status == "403 None" and _blocked(ast.literal_eval(answer)["error"]) == BLOCKED
    assert LocalTransfer.objects.count() == 1
