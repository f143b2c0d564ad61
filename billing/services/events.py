"""Money events as rows: each written by the code that moves the money, in its transaction
(the INSERT's text built once: attest.prepared.created)."""

from __future__ import annotations

import datetime

from django.db.models import Sum

from attest.prepared import created
from billing.models import CreditAccount, CreditHold, MoneyEvent, PaymentClaim

Kind = MoneyEvent.Kind
Rail = MoneyEvent.Rail


def claim_event(kind: str, claim: PaymentClaim) -> MoneyEvent:
    """An x402 claim, settlement or release; the amount in the asset's atomic units
    (USDC's: micro-USD, the unit of a credit balance)."""
    return created(
        MoneyEvent,
        kind=kind,
        rail=Rail.X402,
        amount=int(claim.amount),
        route=claim.route,
        request_id=claim.request_id,
        claim=claim,
    )


def credit_event(
    kind: str,
    account: CreditAccount,
    *,
    amount: int,
    route: str = "",
    request_id: str = "",
    hold: CreditHold | None = None,
    claim: PaymentClaim | None = None,
) -> MoneyEvent:
    return created(
        MoneyEvent,
        kind=kind,
        rail=Rail.CREDIT,
        amount=amount,
        route=route,
        request_id=request_id,
        account=account,
        hold=hold,
        claim=claim,
    )


def day_totals(day: datetime.date) -> dict[tuple[str, str], int]:
    """The sum of each (rail, kind) of money event on one UTC day, for reconciliation."""
    rows = (
        MoneyEvent.objects.filter(at__date=day)
        .values("rail", "kind")
        .annotate(total=Sum("amount"))
        .order_by()
    )
    return {(row["rail"], row["kind"]): row["total"] for row in rows}
