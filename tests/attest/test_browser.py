"""An auditor's tour in a real browser: the landing page, a docs page, a fact's timeline and
the dashboard, with nothing to change anywhere and every list fitting a 1280 px screen.

Debian's Chromium through Playwright against the service on a live server (a free port).
Screenshots are written to ``var/screenshots/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

from datetime import timedelta
from importlib import import_module
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone

from attest.apps import AUDITORS_GROUP
from billing.models import PaymentClaim, Settlement
from citations.models import AuditEvent, Fact, Project
from tests.browser import chromium, needs_chromium
from tests.citations.conftest import make_ledger
from verification.models import Verification

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
WIDTH = 1280
USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"


@pytest.fixture
def records(_audit_log_cleared):
    """A ledger with a supersession, and a few days of calls and charges."""
    ledger = make_ledger()
    # Galway in a request of its own: Dublin then closes it, so it has two versions.
    galway = ledger.ingest("user-1", ("m1", "I live in Galway.", "2025-06-01T09:00:00Z"))
    assert galway.status_code == 201
    response = ledger.ingest(
        "user-1",
        ("m2", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"),
        ("m3", "I like sea swimming and long walks.", "2026-03-05T08:00:00Z"),
    )
    assert response.status_code == 201
    now = timezone.now()
    for index, (outcome, tier, code) in enumerate(
        [("answered", "trial", ""), ("answered", "paid", ""), ("refused", "", "blocked")] * 3
    ):
        record = Verification.objects.create(
            route="verify/quote",
            request_id=f"r{index}",
            outcome=outcome,
            tier=tier,
            status_code=200 if outcome == "answered" else 403,
            error_code=code,
            mode="fuzzy",
            requested_url="https://a-rather-long-host-name.example.org/some/deep/path/to/a/page",
            host="a-rather-long-host-name.example.org",
            total_ms=1234.5678,
        )
        Verification.objects.filter(pk=record.pk).update(created_at=now - timedelta(days=index))
        claim = PaymentClaim.objects.create(
            route="verify/quote",
            network="eip155:84532",
            asset=USDC,
            payer="0x" + "5" * 40,
            nonce=f"0x{index:064x}",
            amount="10000",
            valid_before=0,
            state="settled",
        )
        Settlement.objects.create(
            claim=claim,
            facilitator="local",
            success=True,
            network="eip155:84532",
            amount="10000",
            payer="0x" + "5" * 40,
            transaction="0x" + "ab" * 32,
        )
    return ledger


@pytest.fixture
def _audit_log_cleared(transactional_db):
    """SQLite empties tables with DELETE, which the append-only trigger refuses: the test's
    audit rows are removed with the trigger lifted for that moment (PostgreSQL truncates)."""
    yield
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER citations_auditevent_no_delete")
        cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table}")
        cursor.execute(import_module("citations.migrations.0002_ledger_exclusion").SQLITE_AUDIT[1])


@pytest.fixture
def auditor(django_user_model):
    user = django_user_model.objects.create_user("audrey", "audrey@example.org", "a-long-pw-1")
    user.is_staff = True
    user.save()
    user.groups.add(Group.objects.get(name=AUDITORS_GROUP))
    return user


def _shot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000  # a real picture, not an empty file
    return path


def _no_controls(page) -> None:
    """No save, add or delete control, and no bulk action, visible anywhere on the page."""
    for selector in (
        "input[type=submit][name^=_save]",
        "input[name=_continue]",
        "input[name=_addanother]",
        "a.addlink",
        "a.deletelink",
        "select[name=action]",
        "input[type=checkbox][name=_selected_action]",
    ):
        # The admin's script keeps hidden "Add another" rows; what counts is what shows.
        assert page.locator(f"{selector}:visible").count() == 0, selector


def _fits(page, label: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDTH, f"{label} is {width} px wide"


def test_an_auditor_reads_everything_and_changes_nothing(live_server, records, auditor, tmp_path):
    fact = Fact.objects.get(value="Galway")
    subject = fact.subject
    project = records.project
    with chromium(tmp_path / "profile", viewport={"width": WIDTH, "height": 900}) as browser:
        page = browser.new_page()

        page.goto(f"{live_server.url}/")
        assert page.locator("h1").inner_text() == "Attest"
        _shot(page, "landing")

        page.goto(f"{live_server.url}/docs/verify-citations")
        assert page.locator("h1").inner_text() == "Verify citations"
        assert page.locator("nav.docs a[aria-current=page]").inner_text() == "Verify citations"
        _shot(page, "docs-verify-citations")
        page.locator("a[rel=next]").click()
        assert page.locator("h1").inner_text() == "Fetch a page"

        page.goto(f"{live_server.url}/admin/login/?next=/admin/")
        page.fill("input[name=username]", "audrey")
        page.fill("input[name=password]", "a-long-pw-1")
        page.click("input[type=submit]")
        page.wait_for_url(f"{live_server.url}/admin/")
        assert page.locator("#attest-dashboard-link a").count() == 1
        _no_controls(page)

        page.goto(f"{live_server.url}/admin/citations/fact/{fact.pk}/change/")
        timeline = page.locator("svg.timeline")
        assert timeline.is_visible()
        box = timeline.bounding_box()
        assert box["width"] > 600 and box["height"] > 150
        assert page.locator("svg.timeline g.version").count() == 2
        assert "I live in Galway" in page.locator("td.field-words").first.inner_text()
        _no_controls(page)
        _shot(page, "fact-timeline")
        _fits(page, "the fact page")

        page.goto(f"{live_server.url}/admin/citations/subject/{subject.pk}/change/")
        assert page.locator("svg.timeline g.panel").count() == 2
        _no_controls(page)
        _shot(page, "subject-timeline")

        page.goto(f"{live_server.url}/admin/dashboard/")
        assert page.locator("svg.dashboard-chart").is_visible()
        # Nine settlements of 0.01 USDC today.
        assert "0.09 USDC" in page.locator("#daily tbody tr").first.inner_text()
        _no_controls(page)
        _fits(page, "the dashboard")
        _shot(page, "dashboard")

        for path in (
            "citations/fact/",
            "citations/fact/?status=validity_closed",
            "citations/evidence/",
            "citations/project/",
            "citations/auditevent/",
            "verification/verification/",
            "verification/batch/",
            "billing/settlement/",
            "billing/paymentclaim/",
        ):
            page.goto(f"{live_server.url}/admin/{path}")
            assert page.locator("#result_list, p.paginator").count() >= 1, path
            _no_controls(page)
            _fits(page, path)
        _shot(page, "payment-claims")

        # Posting anyway, with a valid CSRF token, is refused and changes nothing.
        token = next(c["value"] for c in browser.cookies() if c["name"] == "csrftoken")
        headers = {"X-CSRFToken": token, "Referer": f"{live_server.url}/admin/"}
        change = page.request.post(
            f"{live_server.url}/admin/citations/fact/{fact.pk}/change/",
            form={"value": "Cork"},
            headers=headers,
        )
        assert change.status == 403
        suspend = page.request.post(
            f"{live_server.url}/admin/citations/project/",
            form={"action": "suspend", "_selected_action": str(project.pk)},
            headers=headers,
        )
        assert suspend.status in (200, 302, 403)
        delete = page.request.post(
            f"{live_server.url}/admin/citations/fact/{fact.pk}/delete/",
            form={"post": "yes"},
            headers=headers,
        )
        assert delete.status == 403
        dashboard = page.request.post(f"{live_server.url}/admin/dashboard/", headers=headers)
        assert dashboard.status == 405
    assert Fact.objects.get(pk=fact.pk).value == "Galway"
    assert Project.objects.get(pk=project.pk).suspended_at is None
