"""A payment claim's life: claimed and settling under a lease, then settled, pending or released."""

from __future__ import annotations

import datetime
import math
from functools import cache

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from attest.prepared import PreparedQuery, columns, first_of, prepared, run, saved
from billing.models import MoneyEvent, PaymentClaim
from billing.pricing import PricedRoute
from billing.services.credit import top_up_settled
from billing.services.events import claim_event

State = PaymentClaim.State

# Slack on top of the longest settle call, for the database writes around it.
SETTLE_LEASE_MARGIN_SECONDS = 5
# An authorization pays for at most this many runs that end uncharged (a refusal met after
# the payment was verified frees the claim): the first call and two retries. A refusal costs
# the caller nothing, so without a bound one signature would buy unbounded work.
UNCHARGED_RUNS_PER_AUTHORIZATION = 3


def work_lease_end(route: PricedRoute) -> datetime.datetime:
    """A worker running ``route`` is presumed dead once its declared work time has passed."""
    return timezone.now() + datetime.timedelta(seconds=route.work_seconds)


def settle_lease_end() -> datetime.datetime:
    # The SDK asks again once when a settle answers "pending": one settle, two timeouts.
    seconds = 2 * settings.X402_FACILITATOR_TIMEOUT + SETTLE_LEASE_MARGIN_SECONDS
    return timezone.now() + datetime.timedelta(seconds=seconds)


def live_claim(key: dict[str, str]) -> PaymentClaim | None:
    """The claim holding this authorization, if any (released claims hold nothing)."""
    found = _LIVE_CLAIM.rows(None, **key)
    return found[0] if found else None


def _live_claim(_: None, **key: str) -> QuerySet[PaymentClaim]:
    return first_of(PaymentClaim.objects.filter(**key).exclude(state=State.RELEASED))


# The statements of every x402 call, their texts built once (attest.prepared): compiling
# the ORM's querysets was most of each one's CPU.
_LIVE_CLAIM = PreparedQuery(_live_claim, network=str, asset=str, payer=str, nonce=str)


def uncharged_runs(key: dict[str, str]) -> int:
    """How many runs this authorization paid for that ended uncharged (released claims)."""
    names = tuple(sorted(key))
    _, rows = run(
        _released_count_sql(names),
        prepared(PaymentClaim, **{n: key[n] for n in names}, state=State.RELEASED),
    )
    return int(rows[0][0])


@cache
def _released_count_sql(names: tuple[str, ...]) -> str:
    """``PaymentClaim.objects.filter(**key, state=...).count()``."""
    table = connection.ops.quote_name(PaymentClaim._meta.db_table)
    where = " AND ".join(f"{column} = %s" for column in columns(PaymentClaim, *names, "state"))
    return f"SELECT COUNT(*) FROM {table} WHERE ({where})"


def in_flight(claim: PaymentClaim) -> bool:
    """Work or settlement is running for the claim in a worker whose lease has not ended."""
    return (
        claim.state in (State.CLAIMED, State.SETTLING)
        and claim.lease_until is not None
        and claim.lease_until > timezone.now()
    )


def lease_seconds_left(claim: PaymentClaim) -> int:
    if claim.lease_until is None:
        return 1
    return max(1, math.ceil((claim.lease_until - timezone.now()).total_seconds()))


def claim_release_abandoned(claim: PaymentClaim) -> bool:
    """Free a claim whose worker died mid-work: no settlement was sent, so no money moved."""
    now = timezone.now()
    with transaction.atomic():
        freed = PaymentClaim.objects.filter(
            pk=claim.pk, state=State.CLAIMED, lease_until__lte=now
        ).update(
            state=State.RELEASED, outcome="abandoned_mid_work", lease_until=None, updated_at=now
        )
        if freed:
            claim_event(MoneyEvent.Kind.RELEASE, claim)
    return bool(freed)


def claim_begin_settling(claim: PaymentClaim) -> bool:
    """Move this worker's claim from claimed to settling, under a settle lease.

    False when the claim is no longer claimed: this worker outlived its lease and a retry
    freed the authorization, so this worker must not settle it.
    """
    lease = settle_lease_end()
    taken, _ = run(
        _begin_settling_sql(),
        prepared(
            PaymentClaim,
            state=State.SETTLING,
            lease_until=lease,
            updated_at=timezone.now(),
            id=claim.pk,
        )
        + prepared(PaymentClaim, state=State.CLAIMED),
    )
    if taken:
        claim.state, claim.lease_until = State.SETTLING, lease
    return bool(taken)


@cache
def _begin_settling_sql() -> str:
    """``PaymentClaim.objects.filter(pk=..., state=CLAIMED).update(state=..., lease_until=...,
    updated_at=...)``."""
    table = connection.ops.quote_name(PaymentClaim._meta.db_table)
    state, lease_until, updated_at, key = columns(
        PaymentClaim, "state", "lease_until", "updated_at", "id"
    )
    return (
        f"UPDATE {table} SET {state} = %s, {lease_until} = %s, {updated_at} = %s "
        f"WHERE ({key} = %s AND {state} = %s)"
    )


def claim_take_for_reconcile(claim: PaymentClaim) -> bool:
    """Take a pending claim, or a settling one whose worker died, to settle it again."""
    now, lease = timezone.now(), settle_lease_end()
    taken = (
        PaymentClaim.objects.filter(pk=claim.pk)
        .filter(Q(state=State.PENDING) | Q(state=State.SETTLING, lease_until__lte=now))
        .update(state=State.SETTLING, lease_until=lease, updated_at=now)
    )
    if taken:
        claim.state, claim.lease_until = State.SETTLING, lease
    return bool(taken)


def claim_finish(claim: PaymentClaim, *, state: str, outcome: str) -> None:
    """Leave flight: settled, pending (for a later retry or staff) or released.

    A settled or released claim writes its money event in the same transaction, and a
    settled top-up of prepaid credit grows its owner's balance there too.
    """
    claim.state, claim.outcome, claim.lease_until = state, outcome[:96], None
    with transaction.atomic():
        saved(claim, ["state", "outcome", "lease_until", "updated_at"])
        if state == State.SETTLED:
            claim_event(MoneyEvent.Kind.SETTLE, claim)
            top_up_settled(claim)
        elif state == State.RELEASED:
            claim_event(MoneyEvent.Kind.RELEASE, claim)
