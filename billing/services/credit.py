"""Prepaid credit: a balance per owner that pays priced calls by hold, draw and release.

Amounts are integers of micro-USD (1 USD = 1,000,000), the atomic unit of USDC, so a
top-up's x402 amount is added as it is and no rounding ever happens. A call's price is
**held** at admission by one conditional UPDATE (``balance >= price``), which the database
makes atomic across processes, so the balance never goes below zero; the hold is
**drawn** on a charged outcome and **released** otherwise. A hold whose worker died (its
lease over) is released by ``credit_recover``, run where stale claims are freed: before a
new hold of the same account and when the balance is read. Every move writes its
``MoneyEvent`` row in the same transaction.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import cache

from django.db import connection, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from attest.prepared import PreparedQuery, columns, created, prepared, run
from billing.models import CreditAccount, CreditHold, MoneyEvent, PaymentClaim
from billing.money import usd_micros
from billing.pricing import PricedRoute
from billing.services.events import credit_event

Kind = MoneyEvent.Kind
HoldState = CreditHold.State
# What GET /v1/credits lists: the movements of a balance (not the x402 claim events).
MOVEMENT_KINDS = (Kind.TOP_UP, Kind.HOLD, Kind.DRAW, Kind.RELEASE)
CURRENCY = "USD"
# Slack on top of a route's declared work time before its hold is presumed abandoned.
HOLD_LEASE_MARGIN_SECONDS = 5


class InsufficientCredit(Exception):
    """The balance cannot hold the price; ``balance`` is what it holds now (micro-USD)."""

    def __init__(self, balance: int):
        self.balance = balance
        super().__init__(f"balance {balance} micro-USD")


def route_price(route: PricedRoute) -> int:
    return usd_micros(route.price)


def credit_balance(owner: str) -> int:
    credit_recover(owner)
    account = CreditAccount.objects.filter(owner=owner).first()
    return 0 if account is None else account.balance


def credit_hold(*, owner: str, route: PricedRoute, request_id: str) -> CreditHold:
    """Take the route's price from the balance for one call; ``InsufficientCredit`` if short."""
    price = route_price(route)
    credit_recover(owner)
    lease = timezone.now() + datetime.timedelta(
        seconds=route.work_seconds + HOLD_LEASE_MARGIN_SECONDS
    )
    with transaction.atomic():
        account = _balance_take(owner, price)
        if account is None:
            raise InsufficientCredit(credit_balance_now(owner))
        hold = created(
            CreditHold,
            account=account,
            route=route.name,
            amount=price,
            lease_until=lease,
            request_id=request_id,
        )
        credit_event(
            Kind.HOLD, account, amount=price, route=route.name, request_id=request_id, hold=hold
        )
    return hold


def _balance_take(owner: str, price: int) -> CreditAccount | None:
    """Take ``price`` from the owner's balance if it holds that much: one conditional
    UPDATE, which also answers the account's ID and new balance (RETURNING, on PostgreSQL
    and SQLite alike), so the hold needs no second read of the row. None if short."""
    table = CreditAccount._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET balance = balance - %s "
            "WHERE owner = %s AND balance >= %s RETURNING id, balance",
            [price, owner, price],
        )
        row = cursor.fetchone()
    return None if row is None else CreditAccount(pk=row[0], owner=owner, balance=row[1])


def credit_balance_now(owner: str) -> int:
    return CreditAccount.objects.filter(owner=owner).values_list("balance", flat=True).first() or 0


def credit_draw(hold: CreditHold) -> None:
    """Charge the call its held price.

    A hold this worker outlived (recovered meanwhile: the price went back) is taken again
    from the balance, conditionally as at admission; ``InsufficientCredit`` if it can't be.
    """
    with transaction.atomic():
        drawn, _ = run(
            _draw_sql(),
            prepared(
                CreditHold,
                state=HoldState.DRAWN,
                outcome="charged",
                updated_at=timezone.now(),
                id=hold.pk,
            )
            + prepared(CreditHold, state=HoldState.HELD),
        )
        if not drawn:
            retaken = CreditAccount.objects.filter(
                pk=hold.account_id, balance__gte=hold.amount
            ).update(balance=F("balance") - hold.amount)
            if not retaken:
                raise InsufficientCredit(CreditAccount.objects.get(pk=hold.account_id).balance)
            CreditHold.objects.filter(pk=hold.pk).update(
                state=HoldState.DRAWN, outcome="charged_after_recovery", updated_at=timezone.now()
            )
        credit_event(
            Kind.DRAW,
            hold.account,
            amount=hold.amount,
            route=hold.route,
            request_id=hold.request_id,
            hold=hold,
        )
    hold.state = HoldState.DRAWN


def credit_release(hold: CreditHold, *, outcome: str) -> bool:
    """Give the held price back (an uncharged outcome); False if it is no longer held."""
    with transaction.atomic():
        released = CreditHold.objects.filter(pk=hold.pk, state=HoldState.HELD).update(
            state=HoldState.RELEASED,
            outcome=outcome[:96],
            lease_until=None,
            updated_at=timezone.now(),
        )
        if not released:
            return False
        CreditAccount.objects.filter(pk=hold.account_id).update(balance=F("balance") + hold.amount)
        credit_event(
            Kind.RELEASE,
            hold.account,
            amount=hold.amount,
            route=hold.route,
            request_id=hold.request_id,
            hold=hold,
        )
    hold.state = HoldState.RELEASED
    return True


def credit_recover(owner: str) -> int:
    """Release the holds of ``owner`` whose worker died (lease over); how many were."""
    stale = _STALE_HOLDS.rows(None, owner=owner, now=timezone.now())
    return sum(credit_release(hold, outcome="abandoned_mid_work") for hold in stale)


def _stale_holds(_: None, *, owner: str, now: datetime.datetime) -> QuerySet[CreditHold]:
    return CreditHold.objects.select_related("account").filter(
        account__owner=owner, state=HoldState.HELD, lease_until__lte=now
    )


# Read at every credit call, so compiled once (attest.prepared), as is the draw's UPDATE.
_STALE_HOLDS = PreparedQuery(_stale_holds, owner=str, now=datetime.datetime)


@cache
def _draw_sql() -> str:
    """``CreditHold.objects.filter(pk=..., state=HELD).update(state=DRAWN, outcome=...,
    lease_until=None, updated_at=...)``."""
    table = connection.ops.quote_name(CreditHold._meta.db_table)
    state, outcome, lease_until, updated_at, key = columns(
        CreditHold, "state", "outcome", "lease_until", "updated_at", "id"
    )
    return (
        f"UPDATE {table} SET {state} = %s, {outcome} = %s, {lease_until} = NULL, "
        f"{updated_at} = %s WHERE ({key} = %s AND {state} = %s)"
    )


def top_up_owner(claim: PaymentClaim, owner: str) -> None:
    """Name the owner a paid top-up will credit once its payment settles."""
    PaymentClaim.objects.filter(pk=claim.pk).update(credit_owner=owner)
    claim.credit_owner = owner


def top_up_settled(claim: PaymentClaim) -> None:
    """Credit a settled top-up's amount to its owner, once per claim.

    Called in the transaction that marks the claim settled: the balance grows only with
    money that moved, and a claim settled again (a reconciliation) adds nothing.
    """
    if not claim.credit_owner:
        return
    if MoneyEvent.objects.filter(claim=claim, kind=Kind.TOP_UP).exists():
        return
    amount = int(claim.amount)
    account, _ = CreditAccount.objects.get_or_create(owner=claim.credit_owner)
    CreditAccount.objects.filter(pk=account.pk).update(balance=F("balance") + amount)
    credit_event(
        Kind.TOP_UP,
        account,
        amount=amount,
        route=claim.route,
        request_id=claim.request_id,
        claim=claim,
    )


@dataclass(frozen=True)
class Statement:
    balance: int
    movements: list[MoneyEvent]
    next_after: int | None


def credit_statement(*, owner: str, after: int | None, limit: int) -> Statement:
    """The balance and its movements, newest first, paged by event ID."""
    balance = credit_balance(owner)
    events = MoneyEvent.objects.filter(account__owner=owner, kind__in=MOVEMENT_KINDS).order_by(
        "-pk"
    )
    if after is not None:
        events = events.filter(pk__lt=after)
    page = list(events[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return Statement(balance=balance, movements=page, next_after=page[-1].pk if more else None)
