"""Admitting a priced call: a trial, a verified and claimed payment, or a paid retry."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import NotRequired, TypedDict

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpResponse
from x402 import PaymentPayload, PaymentRequirements
from x402.http import PAYMENT_SIGNATURE_HEADER

from attest.metrics import PAYMENTS_FAILED, PAYMENTS_VERIFIED
from billing.core.payment_header import (
    MalformedAuthorization,
    decode_payment,
    payment_digest,
    read_authorization,
)
from billing.exceptions import FacilitatorUnavailable, PaymentRequiredError, SettlementPending
from billing.facilitators import FACILITATOR_ERRORS, resource_server
from billing.models import PaymentClaim
from billing.pricing import SETTLEMENT_SECONDS, PricedRoute
from billing.services.answers import answer_for_retry, answer_response
from billing.services.calls import TIER_PAID, TIER_TRIAL, PricedCall, VerifiedPayment
from billing.services.claims import (
    UNCHARGED_RUNS_PER_AUTHORIZATION,
    claim_release_abandoned,
    in_flight,
    lease_seconds_left,
    live_claim,
    uncharged_runs,
    work_lease_end,
)
from billing.services.offers import offer_error, refusal_error, route_requirement
from billing.services.payment_ids import (
    MalformedPaymentId,
    payment_id_claim,
    payment_id_conflict,
    payment_id_read,
)
from billing.services.settlement import claim_reconcile
from billing.trial import trial_day, trial_reserve, trial_spent
from billing.unpaid import payment_header

logger = logging.getLogger("attest.billing")

State = PaymentClaim.State
_BIGINT_MAX = 2**63 - 1


class _Caller(TypedDict):
    client_ip: str
    request_id: str


class _Refuse(_Caller):
    """What a refused payment is recorded with: refusal_error's keywords."""

    route: PricedRoute
    payer: NotRequired[str]


class _ById(TypedDict):
    payment_id: str
    payer: str
    payload: PaymentPayload
    requirements: PaymentRequirements


def call_admit(
    *,
    route: PricedRoute,
    headers: Mapping[str, str],
    client_ip: str,
    request_id: str,
    request_digest: str,
    trial_size: int = 1,
) -> PricedCall:
    """Let a priced call run as a trial or as a verified, claimed payment; else raise.

    A retry of a request already paid for comes back with ``replay`` set: the stored
    answer, sent as it is. Raises ``PaymentRequiredError`` (402 with the offer),
    ``SettlementPending`` while the same payment's work or settlement is in flight or
    unconfirmed, or ``FacilitatorUnavailable``.
    """
    call = PricedCall(
        route=route, tier=TIER_TRIAL, client_ip=client_ip, request_id=request_id, day=trial_day()
    )
    header = payment_header(headers)
    if not header:
        _admit_trial(call, trial_size=trial_size)
        return call
    call.tier = TIER_PAID
    legacy = not headers.get(PAYMENT_SIGNATURE_HEADER)
    _admit_payment(call, header=header, request_digest=request_digest, legacy=legacy)
    return call


def _admit_trial(call: PricedCall, *, trial_size: int) -> None:
    ids: _Caller
    route, ids = call.route, {"client_ip": call.client_ip, "request_id": call.request_id}
    if route.trial_max_size is not None and trial_size > route.trial_max_size:
        raise offer_error(
            route=route,
            reason="trial_too_large",
            trial_max_size=route.trial_max_size,
            message=f"A free-trial call covers at most {route.trial_max_size}; "
            "pay for a larger batch with the offer in PAYMENT-REQUIRED.",
            **ids,
        )
    call.trial_calls_left = trial_reserve(client_ip=call.client_ip, day=call.day)
    if call.trial_calls_left is not None:
        return
    # No budget configured, or no address to keep one for: no trial was ever on offer.
    limit = settings.ATTEST_TRIAL_CALLS_PER_DAY
    if not (limit > 0 and call.client_ip):
        raise offer_error(route=route, reason="payment_required", **ids)
    if trial_spent(client_ip=call.client_ip, day=call.day) < limit:
        # The places left are only held by calls still running; any of them that ends
        # uncharged gives its place back, so the day's budget is not spent.
        raise offer_error(
            route=route,
            reason="trial_busy",
            message="Today's free calls left are held by calls of yours still running; retry "
            "when one ends, or pay with the offer in PAYMENT-REQUIRED.",
            **ids,
        )
    raise offer_error(route=route, reason="trial_exhausted", **ids)


def _admit_payment(call: PricedCall, *, header: str, request_digest: str, legacy: bool) -> None:
    """Match, check, verify and claim the payment in ``header``, in that order.

    Sets ``call.payment``, or ``call.replay`` for a retry of a request already paid for.
    """
    route = call.route
    refuse: _Refuse = {"route": route, "client_ip": call.client_ip, "request_id": call.request_id}
    requirement = route_requirement(route)
    payload = decode_payment(header, requirement)
    if payload is None:
        raise refusal_error(
            reason="malformed_payment",
            message="The payment header is not a base64 JSON x402 payment (x402Version 2, or 1 "
            "in X-PAYMENT) for this network.",
            **refuse,
        )
    server = resource_server()
    matched = server.find_matching_requirements([requirement], payload)
    if matched is None:
        raise refusal_error(
            reason="payment_mismatch",
            message="The payment does not accept this route's offer; sign the offer in "
            "PAYMENT-REQUIRED.",
            **refuse,
        )
    try:
        authorization = read_authorization(payload.payload)
    except MalformedAuthorization:
        raise refusal_error(
            reason="malformed_payment",
            message="The payment carries no well-formed EIP-3009 authorization: 0x-hex "
            "addresses, a 32-byte 0x-hex nonce, decimal value and times, a 0x-hex signature.",
            **refuse,
        ) from None
    refuse["payer"] = authorization.payer
    payment_id = _payment_id(payload, refuse)
    key = {
        "network": matched.network,
        "asset": matched.asset.lower(),
        "payer": authorization.payer,
        "nonce": authorization.nonce,
    }
    digests = {"request_digest": request_digest, "payment_digest": payment_digest(payload)}

    live = live_claim(key)
    if live is not None:
        outcome = _retry(
            call, live, payload=payload, requirements=matched, legacy=legacy, **digests
        )
        if isinstance(outcome, VerifiedPayment):
            call.payment = outcome
            return
        if outcome is not None:
            call.replay = outcome
            return
        # The claim was abandoned mid-work and is now free: claim it afresh below.

    needed = route.work_seconds + SETTLEMENT_SECONDS
    if authorization.valid_before < time.time() + needed:
        raise refusal_error(
            reason="authorization_expires_too_soon",
            message=f"The authorization must stay valid for at least {needed} seconds; "
            "sign a new one.",
            **refuse,
        )
    try:
        verified = server.verify_payment(payload, matched)
    except FACILITATOR_ERRORS as exc:
        logger.warning("billing.verify_failed", extra={"error": str(exc)})
        PAYMENTS_FAILED.labels("verify", "facilitator_unavailable").inc()
        raise FacilitatorUnavailable(details={"reason": "verify_failed"}) from exc
    if not verified.is_valid:
        PAYMENTS_FAILED.labels("verify", (verified.invalid_reason or "payment_invalid")[:64]).inc()
        raise refusal_error(
            reason=verified.invalid_reason or "payment_invalid",
            message="The payment did not verify; see details.reason.",
            **refuse,
        )
    PAYMENTS_VERIFIED.labels(route.name).inc()
    by_id: _ById = {
        "payment_id": payment_id,
        "payer": authorization.payer,
        "payload": payload,
        "requirements": matched,
    }
    if _admit_by_payment_id(call, legacy=legacy, request_digest=request_digest, **by_id):
        return

    try:
        with transaction.atomic():
            claim = PaymentClaim.objects.create(
                route=route.name,
                amount=matched.amount,
                # A payer may sign "valid until 2**256"; the ledger's column stops at 2**63.
                valid_before=min(authorization.valid_before, _BIGINT_MAX),
                lease_until=work_lease_end(route),
                payment={
                    "payload": payload.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "requirements": matched.model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    ),
                },
                client_ip=call.client_ip or None,
                request_id=call.request_id,
                payment_id=payment_id,
                **digests,
                **key,
            )
    except IntegrityError:
        # A parallel payment under the same identifier claimed it first: answer from it.
        if _admit_by_payment_id(call, legacy=legacy, request_digest=request_digest, **by_id):
            return
        # A parallel request claimed the same authorization after our check above: answer
        # as to any payment that holds a claim (the same request in flight waits).
        live = live_claim(key)
        if live is None or (live.state == State.CLAIMED and not in_flight(live)):
            raise _already_used(refuse) from None
        outcome = _retry(
            call, live, payload=payload, requirements=matched, legacy=legacy, **digests
        )
        if not isinstance(outcome, HttpResponse):
            raise _already_used(refuse) from None
        call.replay = outcome
        return
    _within_uncharged_runs(claim, key=key, refuse=refuse)
    logger.info("billing.claimed", extra={"route": route.name, "payer": authorization.payer})
    call.payment = VerifiedPayment(
        payload=payload, requirements=matched, claim=claim, legacy_header=legacy
    )


def _within_uncharged_runs(claim: PaymentClaim, *, key: dict, refuse: _Refuse) -> None:
    """402 ``payment_retries_used`` (and no claim) once the authorization has paid for
    UNCHARGED_RUNS_PER_AUTHORIZATION runs that ended uncharged.

    Counted while this claim is held: only the holder of the one live claim releases one,
    so no parallel request can add a run meanwhile.
    """
    used = uncharged_runs(key)
    if used < UNCHARGED_RUNS_PER_AUTHORIZATION:
        return
    claim.delete()  # it never ran: the refusal below is its record
    raise refusal_error(
        reason="payment_retries_used",
        message=f"This authorization already paid for {used} calls that ended uncharged "
        "(a refusal after the payment was verified); sign a new one.",
        **refuse,
    )


def _retry(
    call: PricedCall,
    live: PaymentClaim,
    *,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    legacy: bool,
    request_digest: str,
    payment_digest: str,
) -> VerifiedPayment | HttpResponse | None:
    """What a payment that already holds a claim gets: the stored answer, a wait, or 402.

    The same request with the same payment is a retry: it gets the stored answer once the
    payment is settled, 503 ``settlement_pending`` while its work or settlement is in flight
    or unconfirmed (money may be moving: never "pay again"). The same payment on another
    request is 402 ``payment_already_used``. A claim whose worker died is freed (mid-work,
    no money moved: returns None) or reconciled (mid-settle: money may have moved).
    """
    refuse: _Refuse = {
        "route": call.route,
        "client_ip": call.client_ip,
        "request_id": call.request_id,
        "payer": live.payer,
    }
    same = live.request_digest == request_digest and live.payment_digest == payment_digest
    if live.state == State.SETTLED:
        answer = answer_for_retry(live) if same else None
        if answer is None:
            raise _already_used(refuse)
        logger.info("billing.replayed", extra={"route": live.route, "payer": live.payer})
        return answer_response(answer, legacy_header=legacy)
    if in_flight(live):
        if not same:
            raise _already_used(refuse)
        reason = "work_in_progress" if live.state == State.CLAIMED else "settlement_pending"
        raise SettlementPending(retry_after=lease_seconds_left(live), details={"reason": reason})
    if live.state == State.CLAIMED:
        # Its worker died before settling: no settlement was sent, so the claim is freed.
        claim_release_abandoned(live)
        return None
    # Pending, or settling with a dead worker: the money may have moved; find out.
    result, answer = claim_reconcile(live, payload=payload, requirements=requirements)
    if answer is None:
        # A claim from before answers were kept: the retry runs the work, already paid.
        return VerifiedPayment(
            payload=payload,
            requirements=requirements,
            claim=live,
            legacy_header=legacy,
            settled=result,
        )
    if not same:
        raise _already_used(refuse)
    return answer_response(answer, legacy_header=legacy)


def _payment_id(payload: PaymentPayload, refuse: _Refuse) -> str:
    try:
        return payment_id_read(payload)
    except MalformedPaymentId as exc:
        raise refusal_error(
            reason="malformed_payment_identifier",
            message=f"The payment-identifier extension is malformed ({exc}): an id is 16 to "
            "128 letters, digits, hyphens and underscores, beside required: true or false.",
            **refuse,
        ) from None


def _admit_by_payment_id(
    call: PricedCall,
    *,
    payment_id: str,
    payer: str,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    legacy: bool,
    request_digest: str,
) -> bool:
    """Answer a verified payment under an identifier its payer already used, if it is one.

    Nothing is claimed for it, so it is never charged: the same request is the first
    payment's retry (its stored answer, or 503 while that payment's work or settlement is
    in flight); another request, or one whose answer is no longer kept, is 409. False when
    the identifier holds no live claim: the payment is claimed as any other.
    """
    if not payment_id:
        return False
    earlier = payment_id_claim(payer=payer, payment_id=payment_id)
    if earlier is None:
        return False
    if earlier.request_digest != request_digest:
        raise payment_id_conflict(client_ip=call.client_ip, reason="other_request")
    if earlier.state == State.SETTLED and answer_for_retry(earlier) is None:
        raise payment_id_conflict(client_ip=call.client_ip, reason="answer_expired")
    outcome = _retry(
        call,
        earlier,
        payload=payload,
        requirements=requirements,
        legacy=legacy,
        request_digest=request_digest,
        payment_digest=earlier.payment_digest,
    )
    if isinstance(outcome, VerifiedPayment):
        call.payment = outcome
    elif outcome is not None:
        call.replay = outcome
    return outcome is not None


def _already_used(refuse: _Refuse) -> PaymentRequiredError:
    return refusal_error(
        reason="payment_already_used",
        message="This authorization has already paid for another call; sign a new one.",
        **refuse,
    )
