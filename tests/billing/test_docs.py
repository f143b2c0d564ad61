"""The README's payment docs hold: its charging table is the code's, its client example pays."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest
from eth_account import Account

from billing.charging import CHARGING_RULES, UNCHARGED_CODES, response_is_charged
from billing.models import LocalTransfer
from tests.billing.urls import UNCHARGED

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _section(heading: str) -> str:
    start = README.index(heading)
    end = README.find("\n#", start + len(heading))
    return README[start:end]


def test_readme_charging_table_is_the_code_table():
    rows = []
    for line in _section("### What is charged").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].isdigit():
            code = cells[2].strip("`")
            rows.append((cells[0], int(cells[1]), None if code == "—" else code, cells[3] == "yes"))
    assert rows == [(r.outcome, r.status, r.code, r.charged) for r in CHARGING_RULES]


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
def test_readme_client_example_pays_for_a_call(live_server, monkeypatch):
    code = re.search(r"### Paying from Python.*?```python\n(.*?)```", README, re.S).group(1)
    monkeypatch.setitem(os.environ, "PAYER_KEY", Account.create().key.hex())
    monkeypatch.setitem(os.environ, "ATTEST_URL", live_server.url)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
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
