"""Admitting a priced call: how it is paid (``call_rail``), then a trial, a credit hold, a
verified and claimed payment, or a paid retry (``call_admit``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpResponse
from x402 import PaymentPayload, PaymentRequirements
from x402.http import PAYMENT_SIGNATURE_HEADER

from attest.metrics import PAYMENTS_FAILED, PAYMENTS_VERIFIED
from attest.prepared import created
from billing.core.payment_header import (
    Authorization,
    MalformedAuthorization,
    decode_payment,
    payment_digest,
    read_authorization,
)
from billing.exceptions import FacilitatorUnavailable, PaymentRequiredError, SettlementPending
from billing.facilitators import FACILITATOR_ERRORS, resource_server
from billing.models import MoneyEvent, PaymentClaim
from billing.money import usd_text
from billing.owners import InvalidCredential, bearer_token, owner_of
from billing.pricing import SETTLEMENT_SECONDS, PricedRoute
from billing.services.answers import answer_for_retry, answer_response
from billing.services.calls import (
    RAIL_CREDIT,
    RAIL_X402,
    TIER_PAID,
    TIER_TRIAL,
    PricedCall,
    VerifiedPayment,
)
from billing.services.claims import (
    UNCHARGED_RUNS_PER_AUTHORIZATION,
    claim_release_abandoned,
    in_flight,
    lease_seconds_left,
    live_claim,
    uncharged_runs,
    work_lease_end,
)
from billing.services.credit import InsufficientCredit, credit_hold, route_price
from billing.services.events import claim_event
from billing.services.offers import offer_error, refusal_error, route_requirement
from billing.services.payment_ids import (
    MalformedPaymentId,
    payment_id_claim,
    payment_id_conflict,
    payment_id_read,
)
from billing.services.settlement import claim_reconcile
from billing.trial import trial_day, trial_reserve, trial_spent
from billing.unpaid import count_refused_payment, payment_header

logger = logging.getLogger("attest.billing")

State = PaymentClaim.State
RAIL_UNPAID = "unpaid"
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


@dataclass(frozen=True)
class Rail:
    """How a priced call is paid, read from its headers before anything else is done."""

    kind: str  # "x402", "credit" or "unpaid" (a trial call, or the offer)
    header: str = ""  # x402: the payment header
    legacy: bool = False  # x402: sent as v1's X-PAYMENT
    owner: str = ""  # credit: whose balance pays

    @property
    def paid(self) -> bool:
        return self.kind != RAIL_UNPAID


def call_rail(*, headers: Mapping[str, str], client_ip: str, accepts_credit: bool) -> Rail:
    """A payment header pays, whatever else is sent; else a Bearer credential pays from its
    balance (401 ``invalid_credential`` for one that pays for no one, counted as a refused
    payment); else the call is unpaid: a trial, or the offer."""
    header = payment_header(headers)
    if header:
        return Rail(RAIL_X402, header=header, legacy=not headers.get(PAYMENT_SIGNATURE_HEADER))
    token = bearer_token(headers.get("Authorization", "")) if accepts_credit else ""
    if not token:
        return Rail(RAIL_UNPAID)
    try:
        return Rail(RAIL_CREDIT, owner=owner_of(token))
    except InvalidCredential:
        count_refused_payment(client_ip)
        raise


def call_admit(
    *,
    route: PricedRoute,
    rail: Rail,
    client_ip: str,
    request_id: str,
    request_digest: str,
    trial_size: int = 1,
    trial: bool = True,
) -> PricedCall:
    """Let a priced call run as a trial, from a credit hold, or as a verified, claimed
    payment; else raise.

    A retry of a request already paid for comes back with ``replay`` set: the stored
    answer, sent as it is. Raises ``PaymentRequiredError`` (402 with the offer),
    ``SettlementPending`` while the same payment's work or settlement is in flight or
    unconfirmed, or ``FacilitatorUnavailable``. ``trial`` off: an unpaid call gets the
    offer, never a free call.
    """
    call = PricedCall(
        route=route, tier=TIER_TRIAL, client_ip=client_ip, request_id=request_id, day=trial_day()
    )
    if rail.kind == RAIL_UNPAID:
        if not trial:
            raise offer_error(
                route=route, reason="payment_required", client_ip=client_ip, request_id=request_id
            )
        _admit_trial(call, trial_size=trial_size)
        return call
    call.tier = TIER_PAID
    if rail.kind == RAIL_CREDIT:
        _admit_credit(call, owner=rail.owner)
        return call
    _admit_payment(call, header=rail.header, request_digest=request_digest, legacy=rail.legacy)
    return call


def _admit_credit(call: PricedCall, *, owner: str) -> None:
    """Hold the price from the owner's balance; 402 ``insufficient_credit`` when short."""
    try:
        call.hold = credit_hold(owner=owner, route=call.route, request_id=call.request_id)
    except InsufficientCredit as short:
        count_refused_payment(call.client_ip)
        raise offer_error(
            route=call.route,
            reason="insufficient_credit",
            client_ip=call.client_ip,
            request_id=call.request_id,
            balance=usd_text(short.balance),
            message=f"This project's prepaid credit (US${usd_text(short.balance)}) is less "
            f"than this call's price (US${usd_text(route_price(call.route))}); top it up "
            "with POST /v1/credits, or pay this call with the offer in PAYMENT-REQUIRED.",
        ) from None


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
    """Read, match, check, verify and claim the payment in ``header``, in that order.

    Sets ``call.payment``, or ``call.replay`` for a retry of a request already paid for.
    Each step refuses with its own reason (a 402 counted as a refused payment).
    """
    route = call.route
    refuse: _Refuse = {"route": route, "client_ip": call.client_ip, "request_id": call.request_id}
    payload, matched = _payment_read(header, route, refuse)
    authorization = _authorization_read(payload, refuse)
    refuse["payer"] = authorization.payer
    payment = _Payment(
        payload=payload,
        matched=matched,
        payment_id=_payment_id(payload, refuse),
        key={
            "network": matched.network,
            "asset": matched.asset.lower(),
            "payer": authorization.payer,
            "nonce": authorization.nonce,
        },
        digests={"request_digest": request_digest, "payment_digest": payment_digest(payload)},
        legacy=legacy,
    )
    if _answered_by_live_claim(call, payment):
        return
    _within_validity(authorization.valid_before, route, refuse)
    if not _verified(call, payment, refuse):
        return  # the same payment was claimed meanwhile: answered as its retry
    PAYMENTS_VERIFIED.labels(route.name).inc()
    if _answered_by_payment_id(call, payment):
        return
    claim = _claim(call, payment, valid_before=authorization.valid_before, refuse=refuse)
    if claim is None:
        return  # a parallel request claimed it first; call.replay holds its answer
    _within_uncharged_runs(claim, key=payment.key, refuse=refuse)
    logger.info("billing.claimed", extra={"route": route.name, "payer": authorization.payer})
    call.payment = VerifiedPayment(
        payload=payload, requirements=matched, claim=claim, legacy_header=legacy
    )


@dataclass(frozen=True)
class _Payment:
    """A decoded payment that matches the route's offer, as the claim steps need it."""

    payload: PaymentPayload
    matched: PaymentRequirements
    payment_id: str
    key: dict[str, str]  # what makes an authorization one: network, asset, payer, nonce
    digests: dict[str, str]  # request_digest and payment_digest
    legacy: bool

    @property
    def by_id(self) -> _ById:
        return {
            "payment_id": self.payment_id,
            "payer": self.key["payer"],
            "payload": self.payload,
            "requirements": self.matched,
        }


def _payment_read(
    header: str, route: PricedRoute, refuse: _Refuse
) -> tuple[PaymentPayload, PaymentRequirements]:
    """The header decoded, and the route's offer it accepts; 402 when it is neither."""
    requirement = route_requirement(route)
    payload = decode_payment(header, requirement)
    if payload is None:
        raise refusal_error(
            reason="malformed_payment",
            message="The payment header is not a base64 JSON x402 payment (x402Version 2, or 1 "
            "in X-PAYMENT) for this network.",
            **refuse,
        )
    matched = resource_server().find_matching_requirements([requirement], payload)
    if matched is None:
        raise refusal_error(
            reason="payment_mismatch",
            message="The payment does not accept this route's offer; sign the offer in "
            "PAYMENT-REQUIRED.",
            **refuse,
        )
    return payload, matched


def _authorization_read(payload: PaymentPayload, refuse: _Refuse) -> Authorization:
    try:
        return read_authorization(payload.payload)
    except MalformedAuthorization:
        raise refusal_error(
            reason="malformed_payment",
            message="The payment carries no well-formed EIP-3009 authorization: 0x-hex "
            "addresses, a 32-byte 0x-hex nonce, decimal value and times, a 0x-hex signature.",
            **refuse,
        ) from None


def _answered_by_live_claim(call: PricedCall, payment: _Payment) -> bool:
    """A payment that already holds a claim: its retry is answered (stored answer, a
    wait, a 402). False when it holds none, or held one abandoned mid-work, now freed."""
    live = live_claim(payment.key)
    if live is None:
        return False
    outcome = _retry(
        call,
        live,
        payload=payment.payload,
        requirements=payment.matched,
        legacy=payment.legacy,
        **payment.digests,
    )
    if isinstance(outcome, VerifiedPayment):
        call.payment = outcome
    elif outcome is not None:
        call.replay = outcome
    return outcome is not None


def _within_validity(valid_before: int, route: PricedRoute, refuse: _Refuse) -> None:
    needed = route.work_seconds + SETTLEMENT_SECONDS
    if valid_before < time.time() + needed:
        raise refusal_error(
            reason="authorization_expires_too_soon",
            message=f"The authorization must stay valid for at least {needed} seconds; "
            "sign a new one.",
            **refuse,
        )


def _verified(call: PricedCall, payment: _Payment, refuse: _Refuse) -> bool:
    """The facilitator verifies the signature, the payer's funds and an unused nonce.

    503 when it cannot be asked. A refusal is 402, unless the payment holds a claim by now:
    a parallel request with the same payment claimed, and maybe settled, it after
    ``_answered_by_live_claim`` looked, so the facilitator refuses the nonce that request
    used. This request is then that claim's retry, answered as one (the stored answer, a
    wait, or 402 ``payment_already_used`` for another request): False, ``call`` set.
    """
    try:
        verified = resource_server().verify_payment(payment.payload, payment.matched)
    except FACILITATOR_ERRORS as exc:
        logger.warning("billing.verify_failed", extra={"error": str(exc)})
        PAYMENTS_FAILED.labels("verify", "facilitator_unavailable").inc()
        raise FacilitatorUnavailable(details={"reason": "verify_failed"}) from exc
    if verified.is_valid:
        return True
    if _answered_by_live_claim(call, payment):
        return False
    PAYMENTS_FAILED.labels("verify", (verified.invalid_reason or "payment_invalid")[:64]).inc()
    raise refusal_error(
        reason=verified.invalid_reason or "payment_invalid",
        message="The payment did not verify; see details.reason.",
        **refuse,
    )


def _answered_by_payment_id(call: PricedCall, payment: _Payment) -> bool:
    return _admit_by_payment_id(
        call,
        legacy=payment.legacy,
        request_digest=payment.digests["request_digest"],
        **payment.by_id,
    )


def _claim(
    call: PricedCall, payment: _Payment, *, valid_before: int, refuse: _Refuse
) -> PaymentClaim | None:
    """Reserve the authorization for this request (its claim row and money event).

    None when a parallel request won the race: ``call`` then carries what it is answered
    (a payment-identifier retry, or the stored answer of the same request).
    """
    route, matched, payload = call.route, payment.matched, payment.payload
    try:
        with transaction.atomic():
            claim = created(
                PaymentClaim,
                route=route.name,
                amount=matched.amount,
                # A payer may sign "valid until 2**256"; the ledger's column stops at 2**63.
                valid_before=min(valid_before, _BIGINT_MAX),
                lease_until=work_lease_end(route),
                payment={
                    "payload": payload.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "requirements": matched.model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    ),
                },
                client_ip=call.client_ip or None,
                request_id=call.request_id,
                payment_id=payment.payment_id,
                **payment.digests,
                **payment.key,
            )
            claim_event(MoneyEvent.Kind.CLAIM, claim)
    except IntegrityError:
        _claim_race_lost(call, payment, refuse)
        return None
    return claim


def _claim_race_lost(call: PricedCall, payment: _Payment, refuse: _Refuse) -> None:
    """Another request claimed first: answer as that claim's retry, or 402 already used."""
    # A parallel payment under the same identifier claimed it first: answer from it.
    if _answered_by_payment_id(call, payment):
        return
    # A parallel request claimed the same authorization after our check: answer as to any
    # payment that holds a claim (the same request in flight waits).
    live = live_claim(payment.key)
    if live is None or (live.state == State.CLAIMED and not in_flight(live)):
        raise _already_used(refuse) from None
    outcome = _retry(
        call,
        live,
        payload=payment.payload,
        requirements=payment.matched,
        legacy=payment.legacy,
        **payment.digests,
    )
    if not isinstance(outcome, HttpResponse):
        raise _already_used(refuse) from None
    call.replay = outcome


def _within_uncharged_runs(claim: PaymentClaim, *, key: dict, refuse: _Refuse) -> None:
    """402 ``payment_retries_used`` (and no claim) once the authorization has paid for
    UNCHARGED_RUNS_PER_AUTHORIZATION runs that ended uncharged.

    Counted while this claim is held: only the holder of the one live claim releases one,
    so no parallel request can add a run meanwhile.
    """
    used = uncharged_runs(key)
    if used < UNCHARGED_RUNS_PER_AUTHORIZATION:
        return
    with transaction.atomic():  # it never ran, no money moved: the refusal is its record
        MoneyEvent.objects.filter(claim=claim).delete()
        claim.delete()
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
