"""When settlement fails after verify/quote ran, its record says what really happened.

The view records "answered" (and signs a paid receipt) before settlement; the recorder it
names in ``@priced`` corrects the record when the answer is withheld, and again when a
retry reconciles the settlement and is given the stored answer, receipt and all.
"""

from __future__ import annotations

import pytest

from receipts.services import verify_receipt
from tests.billing.conftest import NETWORK, Payer, decode_offer
from tests.billing.facilitator_server import FacilitatorServer
from tests.verification.conftest import _page_server, page, pages  # noqa: F401 - fixtures
from verification.models import Verification

pytestmark = pytest.mark.django_db

QUOTE = "the review is overdue"


@pytest.fixture
def article(pages):  # noqa: F811
    pages.routes["/article"] = page(f"<html><body><p>The committee said {QUOTE}.</p></body></html>")
    return pages.url("/article")


def _post(api, url: str, payment: str | None = None, request_id: str = "call"):
    headers = {"HTTP_X_REQUEST_ID": request_id}
    if payment:
        headers["HTTP_PAYMENT_SIGNATURE"] = payment
    return api.post("/v1/verify/quote", {"url": url, "quote": QUOTE}, format="json", **headers)


def test_a_refused_settlement_leaves_the_verification_recorded_as_refused(api, article, settings):
    payment = Payer().pay(decode_offer(_post(api, article, request_id="ask")))
    with FacilitatorServer(NETWORK, settle_revert="ERC20: transfer amount exceeds balance") as f:
        settings.X402_FACILITATOR_URL = f.url
        refused = _post(api, article, payment=payment, request_id="refused-settle")
    assert refused.status_code == 402
    record = Verification.objects.get(request_id=refused["X-Request-ID"])
    assert (record.outcome, record.status_code, record.error_code) == (
        "refused",
        402,
        "payment_required",
    )


def test_a_pending_settlement_is_recorded_withheld_then_answered_once_reconciled(
    api, article, settings
):
    settings.X402_FACILITATOR_TIMEOUT = 1
    payment = Payer().pay(decode_offer(_post(api, article, request_id="ask")))
    with FacilitatorServer(NETWORK, settle_mode="land_then_hang") as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        pending = _post(api, article, payment=payment, request_id="first")
        facilitator.release()
        facilitator.settle_mode = "ok"
        assert pending.json()["error"]["code"] == "settlement_pending"
        record = Verification.objects.get(request_id=pending["X-Request-ID"])
        assert (record.outcome, record.status_code, record.error_code) == (
            "refused",
            503,
            "settlement_pending",
        )
        served = _post(api, article, payment=payment, request_id="retry")
    assert served.status_code == 200, served.content
    record.refresh_from_db()
    assert (record.outcome, record.status_code, record.error_code) == ("answered", 200, "")
    # The retry ran no work of its own: one record, and the receipt it got says paid, truly.
    assert not Verification.objects.filter(request_id=served["X-Request-ID"]).exists()
    claims = verify_receipt(receipt=served.json()["receipt"]).claims
    assert (claims["tier"], claims["request_id"]) == ("paid", pending["X-Request-ID"])
    assert claims["client_request_id"] == "first"
