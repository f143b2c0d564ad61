"""docs/billing.md's client example pays; the charging table's rules (the docs page renders it)."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest
from eth_account import Account

from billing.charging import UNCHARGED_CODES, response_is_charged
from billing.models import LocalTransfer
from tests.billing.urls import UNCHARGED

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "billing.md").read_text()


def test_every_uncharged_error_a_view_raises_is_in_the_table():
    assert set(UNCHARGED) <= UNCHARGED_CODES


@pytest.mark.parametrize(
    ("status", "charged", "expected"),
    [(200, None, True), (200, False, False), (201, True, True), (404, None, False)],
)
def test_only_a_normal_answer_is_charged(status, charged, expected):
    assert response_is_charged(status=status, charged=charged) is expected


@pytest.mark.django_db(transaction=True)
@pytest.mark.urls("tests.billing.urls")
def test_the_guides_client_example_pays_for_a_call(live_server, monkeypatch):
    code = re.search(r"## Paying from Python.*?```python\n(.*?)```", GUIDE, re.S).group(1)
    monkeypatch.setitem(os.environ, "PAYER_KEY", Account.create().key.hex())
    monkeypatch.setitem(os.environ, "ATTEST_URL", live_server.url)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/billing.md", "exec"), {"__name__": "guide_example"})
    status, settlement = out.getvalue().splitlines()[0].split(" ", 1)
    assert status == "200"
    assert settlement != "None"
    assert "'tier': 'paid'" in out.getvalue()
    assert LocalTransfer.objects.count() == 1


def test_priced_view_keeps_its_openapi_annotations_and_documents_payment():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator(urlconf="tests.billing.urls").get_schema(request=None, public=True)
    operation = schema["paths"]["/v1/test/verify/quote"]["post"]
    assert {"200", "400", "402", "503"} <= set(operation["responses"])
    assert "trial_too_large" in operation["responses"]["402"]["description"]
    assert any(p["name"] == "PAYMENT-SIGNATURE" for p in operation["parameters"])


@pytest.mark.django_db
def test_the_payments_page_says_how_many_uncharged_runs_an_authorization_buys(client):
    from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION

    page = client.get("/docs/payments").content.decode()
    assert f"up to\n  {UNCHARGED_RUNS_PER_AUTHORIZATION} runs of one authorization" in page
    assert "payment_retries_used" in page
    limits = client.get("/docs/limits").content.decode()
    assert "payment_retries_used" in limits
