"""Every admin list fits its box at 1280 px, in a real browser.

The admin puts each changelist's table in a box that scrolls sideways, so a table wider than
its box never widens the page: the document's width says nothing. This test opens the list
of every registered model, each with rows as long as real ones (addresses, transaction
hashes, URLs, amounts), and measures ``#result_list`` against the box that holds it.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from billing.models import (
    LocalTransfer,
    Offer,
    PaidAnswer,
    PaymentClaim,
    Refusal,
    Settlement,
    TrialBudget,
    TrialUse,
)
from citations.models import Fact
from citations.services.corrections import retraction_record
from citations.services.predicates import predicate_declare
from tests.attest.test_browser import _audit_log_cleared  # noqa: F401 (a fixture)
from tests.browser import chromium, needs_chromium
from tests.citations.conftest import make_ledger
from verification.models import CrossrefAnswer, CrossrefLookup, RefusalTally, Verification

# Some 25 pages in a browser, with rows in every table: longer than the default 120 s
# on a loaded machine.
pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium, pytest.mark.timeout(400)]

WIDTH = 1280
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots" / "lists"
USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
PAYER = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"
PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
TX = "0x" + "9f3a" * 16
HOST = "a-rather-long-host-name.example.org"
URL = f"https://{HOST}/some/deep/path/to/an/article-with-a-long-slug.html"
IPV6 = "2001:db8:85a3:1234:5678:8a2e:370:7334"
DOI = "10.1016/j.jbiomech.2019.109512.supplementary-material"


def _rows() -> None:
    """A few rows in every table the admin lists, with values as wide as real ones."""
    ledger = make_ledger()
    ledger.ingest(
        "user-with-a-long-external-id-0001",
        ("m1", "I live in Galway. I speak Spanish and Portuguese.", "2024-01-15T09:00:00Z"),
        ("m2", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"),
    )
    fact = Fact.objects.filter(value="Dublin").first()
    predicate_declare(
        project=ledger.project,
        name="prefers_a_rather_long_interface_theme_name_for_the_list",
        cardinality="one",
        description="The interface theme the user asked for, in their own words.",
        actor="staff:a.long.name",
    )
    retraction_record(
        project=ledger.project, fact_id=str(fact.pk), reason="wrong", actor="staff:a.long.name"
    )
    now = timezone.now().replace(microsecond=0)
    for index, route in enumerate(["verify/quote", "verify/citations", "sample/citations"]):
        Verification.objects.create(
            route=route,
            request_id=f"req-{index:032x}",
            outcome="refused",
            tier="paid",
            status_code=403,
            error_code="content_type_not_supported",
            mode="fuzzy",
            match="fuzzy",
            content_kind="pdf",
            requested_url=URL,
            host=HOST,
            total_ms=12345.678,
            item_count=200,
            failed_count=17,
        )
        claim = PaymentClaim.objects.create(
            route=route,
            network="eip155:84532",
            asset=USDC,
            payer=PAYER,
            nonce=f"0x{index:064x}",
            amount="10000",
            valid_before=0,
            state="settled",
            outcome="answered",
            request_id=f"req-{index:032x}",
            lease_until=now,
        )
        Settlement.objects.create(
            claim=claim,
            facilitator="https://x402.facilitator.example.org",
            success=True,
            network="eip155:84532",
            amount="10000",
            payer=PAYER,
            transaction=TX,
        )
        PaidAnswer.objects.create(
            claim=claim, status_code=200, content_type="application/json", body=b"{}" * 900
        )
        Offer.objects.create(
            minute=now,
            route=route,
            reason="payment_required",
            count=123456,
            network="eip155:84532",
            asset=USDC,
            amount="10000",
            pay_to=PAY_TO,
            caller=IPV6,
            last_request_id=f"req-{index:032x}",
        )
        Refusal.objects.create(
            minute=now,
            route=route,
            reason="insufficient_funds_or_expired_authorization",
            count=98765,
            payer=PAYER,
            caller=IPV6,
        )
        TrialUse.objects.create(route=route, client_ip=IPV6, day=date.today())
        TrialBudget.objects.create(client_ip=f"2001:db8:85a3::8a2e:370:{index}", day=date.today())
        LocalTransfer.objects.create(
            transaction=f"0x{index:064x}",
            chain_id=84532,
            token=USDC,
            payer=PAYER,
            pay_to=PAY_TO,
            value="10000",
            nonce=f"0x{index:064x}",
            valid_after=0,
            valid_before=2**40,
        )
        RefusalTally.objects.create(
            hour=now,
            route=route,
            error_code="content_type_not_supported",
            count=4321,
            last_at=now,
            last_host=HOST,
            last_request_id=f"req-{index:032x}",
        )
        CrossrefAnswer.objects.create(
            doi=f"{DOI}.{index}",
            status="found",
            work={"title": ["A study"]},
            retracted=False,
            fetched_at=now,
            expires_at=now + timedelta(days=1),
        )
        CrossrefLookup.objects.create(
            doi=f"{DOI}.{index}",
            tier="paid",
            status="skipped",
            reason="unavailable",
            http_status=503,
            requests=3,
            latency_ms=1234.5,
            request_id=f"req-{index:032x}",
        )
    # Prepaid credit: an account, a hold drawn (its hold and draw money events).
    from billing.models import CreditAccount
    from billing.pricing import priced_route
    from billing.services.credit import credit_draw, credit_hold

    owner = "project:a-project-with-a-rather-long-name-0001"
    CreditAccount.objects.create(owner=owner, balance=5_000_000)
    hold = credit_hold(
        owner=owner, route=priced_route("verify/citations"), request_id=f"req-{0:032x}"
    )
    credit_draw(hold)
    from django_tasks_db.models import DBTaskResult

    DBTaskResult.objects.create(
        args_kwargs={"args": [], "kwargs": {}},
        task_path="citations.tasks.project_rebuild",
        backend_name="default",
        queue_name="default",
        run_after=now,
        exception_class_path="",
        traceback="",
    )
    Group.objects.get_or_create(name="a group with a rather long name for the list")


def _changelists() -> list[str]:
    """Every registered model's list, except those that draw no result table."""
    return [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for model in admin.site._registry
        if model._meta.label != "receipts.SigningKey"  # a page of its own: #signing-keys
    ]


# The lists with an amount column: it reads in full, "0.01 USDC".
MONEY_LISTS = ("billing/offer/", "billing/paymentclaim/", "billing/settlement/", "localtransfer/")
MEASURE = """() => {
  const table = document.querySelector('#result_list');
  if (!table) return null;
  const box = table.closest('.results') || table.parentElement;
  const cells = [...table.querySelectorAll('tbody tr:first-child td, tbody tr:first-child th')];
  return {table: table.getBoundingClientRect().width, box: box.clientWidth,
          rows: table.querySelectorAll('tbody tr').length,
          cells: cells.map(c => c.innerText),
          clipped: cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText)};
}"""


@pytest.mark.usefixtures("_audit_log_cleared")
def test_every_admin_list_fits_its_box_at_1280_px(live_server, tmp_path):
    _rows()
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("root", "root@example.org", "a-long-pw-1")
    too_wide = []
    with chromium(tmp_path / "profile", viewport={"width": WIDTH, "height": 900}) as browser:
        page = browser.new_page()
        page.goto(f"{live_server.url}/admin/login/?next=/admin/")
        page.fill("input[name=username]", "root")
        page.fill("input[name=password]", "a-long-pw-1")
        page.click("input[type=submit]")
        page.wait_for_url(f"{live_server.url}/admin/")
        for path in _changelists():
            page.goto(f"{live_server.url}{path}")
            found = page.evaluate(MEASURE)
            assert found is not None and found["rows"] >= 1, f"{path} lists no rows"
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            name = path.strip("/").replace("/", "-")
            page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
            if any(money in path for money in MONEY_LISTS):
                assert "0.01 USDC" in found["cells"], (path, found["cells"])  # in full
            if found["clipped"]:
                too_wide.append(f"{path}: cells clipped {found['clipped']}")
            if found["table"] > found["box"] + 0.5:
                too_wide.append(
                    f"{path}: {found['table']:.0f} px in {found['box']} {found['cells']}"
                )
    assert not too_wide, "\n".join(too_wide)
