"""What billing knows about one admitted call of a priced route."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpResponse
from x402 import PaymentPayload, PaymentRequirements
from x402.schemas import SettleResponse

from billing.models import CreditHold, PaymentClaim
from billing.pricing import RAIL, PricedRoute

TIER_TRIAL = "trial"
TIER_PAID = "paid"
RAIL_X402 = RAIL
RAIL_CREDIT = "credit"


@dataclass
class VerifiedPayment:
    """A payment that verified and is claimed for this request."""

    payload: PaymentPayload
    requirements: PaymentRequirements
    claim: PaymentClaim
    legacy_header: bool = False  # paid with v1's X-PAYMENT: answer X-PAYMENT-RESPONSE too
    # Set when a claim from before answers were stored was reconciled as paid: the work
    # runs again and its answer is not settled a second time.
    settled: SettleResponse | None = None

    @property
    def payer(self) -> str:
        return self.claim.payer


@dataclass
class PricedCall:
    """One admitted call of a priced route: a trial, a claimed payment, a credit hold, or a
    replay."""

    route: PricedRoute
    tier: str
    client_ip: str
    request_id: str
    day: datetime.date
    payment: VerifiedPayment | None = None
    # A call paid from prepaid credit: its price, held from the balance while it runs.
    hold: CreditHold | None = None
    trial_calls_left: int | None = None
    # The stored answer to send as it is: this request was already paid for and answered.
    replay: HttpResponse | None = None

    @property
    def rail(self) -> str:
        """How a paid call is paid: "credit" or "x402"; "" for a trial call."""
        if self.hold is not None:
            return RAIL_CREDIT
        return RAIL_X402 if self.tier == TIER_PAID else ""

    @property
    def response_fields(self) -> dict[str, object]:
        """Fields a charged answer gains: a trial says what is left, a paid call its rail."""
        if self.tier == TIER_TRIAL:
            return {"tier": TIER_TRIAL, "trial_calls_left": self.trial_calls_left}
        if self.rail == RAIL_CREDIT:
            return {"tier": TIER_PAID, "rail": RAIL_CREDIT}
        return {"tier": TIER_PAID, "rail": RAIL_X402, "network": settings.X402_NETWORK}
