"""Settling a charged call before its answer leaves, releasing an uncharged one, and
reconciling a settlement whose worker died or whose facilitator gave no answer."""

from __future__ import annotations

import logging

import httpx
from django.db import transaction
from x402 import PaymentPayload, PaymentRequirements
from x402.http import encode_payment_response_header
from x402.schemas import SettleResponse

from attest.errors import AttestError
from attest.metrics import CREDIT_DRAWN_USD, PAYMENTS_FAILED, PAYMENTS_SETTLED, PRICED_CALLS
from attest.prepared import created
from billing.exceptions import FacilitatorUnavailable, SettlementPending
from billing.facilitators import FACILITATOR_ERRORS, facilitator_name, resource_server
from billing.models import PaidAnswer, PaymentClaim, Settlement
from billing.money import MICROS_PER_USD, usd_text
from billing.pricing import RAIL, TOP_UP_ROUTE, PricedRoute, priced_route, top_up_route
from billing.recorders import answer_delivered, answer_withheld
from billing.services.answers import (
    RenderedAnswer,
    answer_discard,
    answer_get,
    answer_mark_settled,
    answer_store,
)
from billing.services.calls import PricedCall
from billing.services.claims import claim_begin_settling, claim_finish, claim_take_for_reconcile
from billing.services.credit import InsufficientCredit, credit_draw, credit_release
from billing.services.offers import offer_error, refusal_error
from billing.trial import trial_record_use, trial_refund

logger = logging.getLogger("attest.billing")

State = PaymentClaim.State
# Errors that prove the settle request never reached the facilitator: no money moved.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, FacilitatorUnavailable)


def _count_call(call: PricedCall, *, result: str, reason: str) -> None:
    rail = "credit" if call.hold is not None else "none" if call.payment is None else RAIL
    PRICED_CALLS.labels(call.route.name, result, reason, call.tier, rail).inc()


def call_release(*, call: PricedCall, outcome: str) -> None:
    """The outcome is not charged: give back the trial call or the credit hold, or free
    the authorization."""
    _count_call(call, result="uncharged", reason=outcome)
    if call.hold is not None:
        credit_release(call.hold, outcome=outcome)
        logger.info("billing.released", extra={"route": call.route.name, "outcome": outcome})
        return
    if call.payment is None:
        trial_refund(client_ip=call.client_ip, day=call.day)
        return
    if call.payment.settled is not None:
        return  # paid by an earlier attempt whose answer was lost; nothing to give back
    claim = call.payment.claim
    # Only this worker's own claim: one a retry took over after the lease is no longer ours.
    if PaymentClaim.objects.filter(pk=claim.pk, state=State.CLAIMED).exists():
        claim_finish(claim, state=State.RELEASED, outcome=outcome)
    logger.info("billing.released", extra={"route": call.route.name, "outcome": outcome})


def call_draw_credit(*, call: PricedCall) -> None:
    """Charge a credit-paid call its held price; 402 ``insufficient_credit`` (the answer
    withheld) only if the hold was recovered meanwhile and the balance no longer holds it."""
    assert call.hold is not None
    try:
        credit_draw(call.hold)
    except InsufficientCredit as short:
        answer_withheld(
            route=call.route.name,
            request_id=call.request_id,
            status_code=402,
            code="payment_required",
        )
        raise offer_error(
            route=call.route,
            reason="insufficient_credit",
            client_ip=call.client_ip,
            request_id=call.request_id,
            balance=usd_text(short.balance),
            message="This call outlived its hold, and the balance no longer holds its price.",
        ) from None
    _count_call(call, result="charged", reason="answered")
    CREDIT_DRAWN_USD.inc(call.hold.amount / MICROS_PER_USD)
    logger.info("billing.drawn", extra={"route": call.route.name})


def call_record_trial_use(*, call: PricedCall) -> None:
    _count_call(call, result="charged", reason="answered")
    trial_record_use(
        client_ip=call.client_ip, day=call.day, route=call.route.name, request_id=call.request_id
    )


def call_settle_paid(*, call: PricedCall, rendered: RenderedAnswer) -> PaidAnswer:
    """Keep the answer, settle the payment, and return the answer once settled.

    The answer is stored in the same transaction that marks the claim settling, so a worker
    that dies mid-settle leaves an answer a retry can be given once the settlement is
    reconciled. A facilitator that could not be reached releases the claim (503, nothing
    charged); one that was reached but gave no definite answer leaves the settlement
    pending: 503 that says so, never an invitation to pay again.
    """
    payment = call.payment
    assert payment is not None
    claim = payment.claim
    if payment.settled is not None:
        # A claim from before answers were kept, reconciled as paid: keep this answer.
        return answer_store(
            claim, rendered, payment_response=encode_payment_response_header(payment.settled)
        )
    with transaction.atomic():
        began = claim_begin_settling(claim)
        answer = answer_store(claim, rendered) if began else None
    if answer is None:
        raise refusal_error(
            route=call.route,
            reason="payment_already_used",
            client_ip=call.client_ip,
            request_id=call.request_id,
            payer=claim.payer,
            message="This request outlived its claim and a retry took the authorization "
            "over; the retry is answered instead.",
        )
    try:
        result = _settle(claim, payment.payload, payment.requirements, first=True)
    except AttestError as exc:  # refused, unreachable, pending (or over the unpaid limit)
        # Pending: the money may have moved, so the call is neither charged nor free yet.
        _count_call(
            call,
            result="pending" if isinstance(exc, SettlementPending) else "uncharged",
            reason=exc.code,
        )
        answer_withheld(
            route=call.route.name,
            request_id=claim.request_id,
            status_code=exc.status_code,
            code=exc.code,
        )
        raise
    answer_mark_settled(answer, payment_response=encode_payment_response_header(result))
    _count_call(call, result="charged", reason="answered")
    return answer


def claim_reconcile(
    claim: PaymentClaim, *, payload: PaymentPayload, requirements: PaymentRequirements
) -> tuple[SettleResponse, PaidAnswer | None]:
    """Settle again a claim that is pending or whose settling worker died: did money move?

    The local record answers first (a successful settlement written just before the worker
    died); otherwise the facilitator is asked to settle again. An EIP-3009 authorization
    can only move money to our own ``payTo``, so a facilitator that reports its nonce as
    used means an earlier settlement went through; one that settles now makes it paid now.
    Either way the call is paid once. Returns the result and the stored answer (None for a
    claim from before answers were kept).
    """
    if not claim_take_for_reconcile(claim):
        raise SettlementPending(details={"reason": "settlement_pending"})
    stored = claim.payment or {}
    if stored:  # the payment exactly as verified, whatever the retry sent
        payload = PaymentPayload.model_validate(stored["payload"])
        requirements = PaymentRequirements.model_validate(stored["requirements"])
    earlier = claim.settlements.filter(success=True).first()
    if earlier is not None:
        result = SettleResponse(
            success=True,
            transaction=earlier.transaction,
            network=earlier.network,
            payer=earlier.payer,
        )
        claim_finish(claim, state=State.SETTLED, outcome="charged")
    else:
        result = _settle(claim, payload, requirements, first=False)
    logger.info("billing.reconciled", extra={"route": claim.route, "payer": claim.payer})
    answer = answer_get(claim)
    if answer is not None:
        answer_mark_settled(answer, payment_response=encode_payment_response_header(result))
        answer_delivered(route=claim.route, request_id=claim.request_id)
    return result, answer


def _settle(
    claim: PaymentClaim,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    *,
    first: bool,
) -> SettleResponse:
    """Ask the facilitator to settle; leave the claim settled, pending or released.

    ``first`` is the worker that produced the answer; otherwise this is a reconciliation,
    where an earlier settle may already have moved the money: then nothing is released,
    and a used nonce means paid.
    """
    # Slow to import (the SDK's EVM half): loaded by the first settlement, see money.py.
    from x402.mechanisms.evm.constants import ERR_NONCE_ALREADY_USED, ERR_SETTLEMENT_PENDING

    try:
        result = resource_server().settle_payment(payload, requirements)
    except _NOT_SENT as exc:
        PAYMENTS_FAILED.labels("settle", "unreachable").inc()
        _record(
            claim,
            SettleResponse(
                success=False, error_reason="unreachable", transaction="", network=claim.network
            ),
        )
        if not first:
            claim_finish(claim, state=State.PENDING, outcome="settlement_pending")
            raise SettlementPending(details={"reason": "facilitator_unreachable"}) from exc
        claim_finish(claim, state=State.RELEASED, outcome="facilitator_unavailable")
        answer_discard(claim)
        raise FacilitatorUnavailable(details={"reason": "settle_unreachable"}) from exc
    except FACILITATOR_ERRORS as exc:
        # Sent, but no answer we can read (a timeout, a 500, a closed connection): the money
        # may have moved, so the claim and the answer wait for a retry to reconcile them.
        logger.warning("billing.settle_pending", extra={"error": str(exc)})
        PAYMENTS_FAILED.labels("settle", "settlement_pending").inc()
        _record(
            claim,
            SettleResponse(
                success=False,
                error_reason="settlement_pending",
                error_message=str(exc)[:200],
                transaction="",
                network=claim.network,
            ),
        )
        claim_finish(claim, state=State.PENDING, outcome="settlement_pending")
        raise SettlementPending(details={"reason": "facilitator_no_answer"}) from exc
    _record(claim, result)
    already_paid = not first and result.error_reason == ERR_NONCE_ALREADY_USED
    if result.success or already_paid:
        claim_finish(claim, state=State.SETTLED, outcome="charged")
        PAYMENTS_SETTLED.labels(claim.route).inc()
        logger.info(
            "billing.settled",
            extra={"route": claim.route, "payer": claim.payer, "transaction": result.transaction},
        )
        return result.model_copy(update={"success": True, "error_reason": None})
    if result.error_reason == ERR_SETTLEMENT_PENDING or not first:
        # A reconciliation refused for another reason (say, the authorization has expired)
        # cannot prove the first settle failed: the claim stays pending for staff, and
        # releasing it could let one payment serve two calls.
        PAYMENTS_FAILED.labels("settle", "settlement_pending").inc()
        claim_finish(claim, state=State.PENDING, outcome="settlement_pending")
        raise SettlementPending(
            details={
                "reason": result.error_reason or "settlement_pending",
                "transaction": result.transaction,
            }
        )
    PAYMENTS_FAILED.labels("settle", (result.error_reason or "settlement_refused")[:64]).inc()
    claim_finish(claim, state=State.RELEASED, outcome=f"settle_refused:{result.error_reason}")
    answer_discard(claim)
    raise refusal_error(
        route=_claim_route(claim),
        reason=result.error_reason or "settlement_refused",
        client_ip=claim.client_ip or "",
        request_id=claim.request_id,
        payer=claim.payer,
        message="The facilitator refused to settle this payment; nothing was charged.",
    )


def _claim_route(claim: PaymentClaim) -> PricedRoute:
    if claim.route == TOP_UP_ROUTE:
        return top_up_route(usd_text(int(claim.amount)))
    return priced_route(claim.route)


def _record(claim: PaymentClaim, result: SettleResponse) -> None:
    created(
        Settlement,
        claim=claim,
        facilitator=facilitator_name(),
        success=result.success,
        transaction=result.transaction or "",
        network=result.network or claim.network,
        payer=(result.payer or claim.payer).lower(),
        amount=claim.amount,
        error_reason=(result.error_reason or "")[:200],
    )
