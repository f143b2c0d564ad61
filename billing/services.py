"""Admitting, settling and releasing priced calls: the x402 flow around a view's work."""

from __future__ import annotations

import datetime
import json
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from x402 import PaymentPayload, PaymentRequirements, ResourceInfo
from x402.http import (
    PAYMENT_RESPONSE_HEADER,
    PAYMENT_SIGNATURE_HEADER,
    X_PAYMENT_HEADER,
    X_PAYMENT_RESPONSE_HEADER,
    encode_payment_required_header,
    encode_payment_response_header,
    safe_base64_decode,
)
from x402.mechanisms.evm.constants import ERR_NONCE_ALREADY_USED, ERR_SETTLEMENT_PENDING
from x402.mechanisms.evm.types import ExactEIP3009Authorization, ExactEIP3009Payload
from x402.mechanisms.evm.v1.constants import V1_NETWORK_CHAIN_IDS
from x402.schemas import PaymentPayloadV1, SettleResponse

from billing.exceptions import (
    EXPOSED_HEADERS,
    FacilitatorUnavailable,
    PaymentRequiredError,
    SettlementPending,
)
from billing.facilitators import (
    FACILITATOR_ERRORS,
    facilitator_name,
    resource_config,
    resource_server,
)
from billing.models import Offer, PaymentClaim, Refusal, Settlement
from billing.pricing import RAIL, SETTLEMENT_SECONDS, PricedRoute
from billing.trial import trial_day, trial_record_use, trial_refund, trial_reserve

logger = logging.getLogger("attest.billing")

TIER_TRIAL = "trial"
TIER_PAID = "paid"


@dataclass
class VerifiedPayment:
    """A payment that verified and is claimed for this request."""

    payload: PaymentPayload
    requirements: PaymentRequirements
    claim: PaymentClaim
    legacy_header: bool = False  # paid with v1's X-PAYMENT: answer X-PAYMENT-RESPONSE too
    # Set when a pending settlement was reconciled on admission: the call is already paid.
    settled: SettleResponse | None = None

    @property
    def payer(self) -> str:
        return self.claim.payer


@dataclass
class PricedCall:
    """What billing knows about one admitted call of a priced route."""

    route: PricedRoute
    tier: str
    client_ip: str
    request_id: str
    day: datetime.date
    payment: VerifiedPayment | None = None

    @property
    def response_fields(self) -> dict[str, str]:
        return {"tier": self.tier, "rail": RAIL, "network": settings.X402_NETWORK}


# --- offers -------------------------------------------------------------------

REASON_MAX_CHARS = Offer._meta.get_field("reason").max_length


def _requirement(route: PricedRoute) -> PaymentRequirements:
    return resource_server().build_payment_requirements(resource_config(price=route.price))[0]


def _offer(
    *,
    route: PricedRoute,
    reason: str,
    client_ip: str,
    request_id: str,
    message: str | None = None,
    **extra: object,
) -> PaymentRequiredError:
    """Build (and record) the 402 for ``route``; the caller raises it."""
    requirement = _requirement(route)
    offer = resource_server().create_payment_required_response(
        [requirement],
        ResourceInfo(
            url=f"{settings.ATTEST_PUBLIC_URL.rstrip('/')}/v1/{route.name}",
            description=route.description,
            mime_type="application/json",
        ),
        reason,
    )
    Offer.objects.create(
        route=route.name,
        reason=reason,
        network=requirement.network,
        asset=requirement.asset,
        amount=requirement.amount,
        pay_to=requirement.pay_to,
        client_ip=client_ip or None,
        request_id=request_id,
    )
    return PaymentRequiredError(
        message,
        reason=reason,
        offer=offer.model_dump(mode="json", by_alias=True, exclude_none=True),
        header=encode_payment_required_header(offer),
        **extra,
    )


def _refuse(
    *,
    route: PricedRoute,
    reason: str,
    client_ip: str,
    request_id: str,
    payer: str = "",
    message: str | None = None,
) -> PaymentRequiredError:
    # Reasons may come from a facilitator, in any length; the ledger's columns have one.
    reason = reason[:REASON_MAX_CHARS]
    Refusal.objects.create(
        route=route.name,
        reason=reason,
        payer=payer.lower(),
        network=settings.X402_NETWORK,
        client_ip=client_ip or None,
        request_id=request_id,
    )
    return _offer(
        route=route, reason=reason, client_ip=client_ip, request_id=request_id, message=message
    )


# --- admission ----------------------------------------------------------------


# A real payment header is well under 2 KB; anything far larger is refused before decoding.
MAX_PAYMENT_HEADER_CHARS = 16 * 1024


def _decode_payment(header: str, requirement: PaymentRequirements) -> PaymentPayload | None:
    """The client's payment as a v2 payload bound to our own requirement, or None.

    Only a JSON object naming ``x402Version`` 2 (or 1, from v1's X-PAYMENT) is read: the
    SDK's decoder would take any other version, or none, as v2. A v1 payload names no
    requirement; it is bound to the server's own, which is what verification checks it
    against anyway.
    """
    if len(header) > MAX_PAYMENT_HEADER_CHARS:
        return None
    try:
        data = json.loads(safe_base64_decode(header))
    except (ValueError, RecursionError):  # bad base64, UTF-8 or JSON; nesting too deep
        return None
    version = data.get("x402Version") if isinstance(data, dict) else None
    if type(version) is not int or version not in (1, 2):
        return None
    try:
        if version == 1:
            decoded = PaymentPayloadV1.model_validate(data)
        else:
            return PaymentPayload.model_validate(data)
    except ValueError:  # pydantic's ValidationError
        return None
    chain_id = V1_NETWORK_CHAIN_IDS.get(decoded.network)
    if decoded.scheme != requirement.scheme or f"eip155:{chain_id}" != requirement.network:
        return None
    return PaymentPayload(payload=decoded.payload, accepted=requirement)


def admit_call(
    *,
    route: PricedRoute,
    headers: Mapping[str, str],
    client_ip: str,
    request_id: str,
    trial_size: int = 1,
) -> PricedCall:
    """Let a priced call run as a trial or as a verified, claimed payment; else raise.

    Raises ``PaymentRequiredError`` (402 with the offer), ``SettlementPending`` when the same
    authorization is still being settled, or ``FacilitatorUnavailable``.
    """
    call = PricedCall(
        route=route, tier=TIER_TRIAL, client_ip=client_ip, request_id=request_id, day=trial_day()
    )
    header = headers.get(PAYMENT_SIGNATURE_HEADER) or headers.get(X_PAYMENT_HEADER)
    if not header:
        _admit_trial(call, trial_size=trial_size)
    else:
        call.tier = TIER_PAID
        call.payment = _admit_payment(call, header=header)
        call.payment.legacy_header = not headers.get(PAYMENT_SIGNATURE_HEADER)
    return call


def _admit_trial(call: PricedCall, *, trial_size: int) -> None:
    route, ids = call.route, {"client_ip": call.client_ip, "request_id": call.request_id}
    if route.trial_max_size is not None and trial_size > route.trial_max_size:
        raise _offer(
            route=route,
            reason="trial_too_large",
            trial_max_size=route.trial_max_size,
            message=f"A free-trial call covers at most {route.trial_max_size}; "
            "pay for a larger batch with the offer in PAYMENT-REQUIRED.",
            **ids,
        )
    if trial_reserve(client_ip=call.client_ip, day=call.day):
        return
    # No budget configured, or no address to keep one for: no trial was ever on offer.
    trial_offered = settings.ATTEST_TRIAL_CALLS_PER_DAY > 0 and bool(call.client_ip)
    reason = "trial_exhausted" if trial_offered else "payment_required"
    raise _offer(route=route, reason=reason, **ids)


def _admit_payment(call: PricedCall, *, header: str) -> VerifiedPayment:
    """Match, check, verify and claim the payment in ``header``, in that order."""
    route = call.route
    refuse = {"route": route, "client_ip": call.client_ip, "request_id": call.request_id}
    requirement = _requirement(route)
    payload = _decode_payment(header, requirement)
    if payload is None:
        raise _refuse(
            reason="malformed_payment",
            message="The payment header is not a base64 JSON x402 payment (x402Version 2, or 1 "
            "in X-PAYMENT) for this network.",
            **refuse,
        )
    server = resource_server()
    matched = server.find_matching_requirements([requirement], payload)
    if matched is None:
        raise _refuse(
            reason="payment_mismatch",
            message="The payment does not accept this route's offer; sign the offer in "
            "PAYMENT-REQUIRED.",
            **refuse,
        )
    try:
        authorization = _authorization(payload)
        valid_before = int(authorization.valid_before)
        payer, nonce = authorization.from_address.lower(), authorization.nonce.lower()
    except (KeyError, TypeError, ValueError, AttributeError):
        raise _refuse(
            reason="malformed_payment",
            message="The payment carries no well-formed EIP-3009 authorization: 0x-hex "
            "addresses, a 32-byte 0x-hex nonce, decimal value and times, a 0x-hex signature.",
            **refuse,
        ) from None
    refuse["payer"] = payer

    needed = route.work_seconds + SETTLEMENT_SECONDS
    if valid_before < time.time() + needed:
        raise _refuse(
            reason="authorization_expires_too_soon",
            message=f"The authorization must stay valid for at least {needed} seconds; "
            "sign a new one.",
            **refuse,
        )
    key = {
        "network": matched.network,
        "asset": matched.asset.lower(),
        "payer": payer,
        "nonce": nonce,
    }
    live = _live_claim(key)
    if live is not None and live.state == PaymentClaim.State.PENDING:
        return _reconcile_pending(live, payload=payload, requirements=matched)
    if live is not None and _settling_abandoned(live):
        # Settlement was sent and its worker died before the answer: whether the money
        # moved is unknown, so the caller must not be invited to pay again.
        raise SettlementPending(details={"reason": "settlement_pending"})
    if live is not None:
        # A reused authorization is refused without asking the facilitator.
        raise _already_used(refuse)

    try:
        verified = server.verify_payment(payload, matched)
    except FACILITATOR_ERRORS as exc:
        logger.warning("billing.verify_failed", extra={"error": str(exc)})
        raise FacilitatorUnavailable(details={"reason": "verify_failed"}) from exc
    if not verified.is_valid:
        raise _refuse(
            reason=verified.invalid_reason or "payment_invalid",
            message="The payment did not verify; see details.reason.",
            **refuse,
        )

    try:
        with transaction.atomic():
            claim = PaymentClaim.objects.create(
                route=route.name,
                amount=matched.amount,
                # A payer may sign "valid until 2**256"; the ledger's column stops at 2**63.
                valid_before=min(valid_before, _BIGINT_MAX),
                client_ip=call.client_ip or None,
                request_id=call.request_id,
                **key,
            )
    except IntegrityError:
        # A parallel request claimed the same authorization after our check above.
        raise _already_used(refuse) from None
    logger.info("billing.claimed", extra={"route": route.name, "payer": payer})
    return VerifiedPayment(payload=payload, requirements=matched, claim=claim)


_BIGINT_MAX = 2**63 - 1
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_NONCE = re.compile(r"0x[0-9a-fA-F]{64}")
_UINT256 = re.compile(r"[0-9]{1,78}")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


def _authorization(payload: PaymentPayload) -> ExactEIP3009Authorization:
    """The payload's EIP-3009 authorization, every field in its one canonical spelling.

    Checked here, so a client's typo is a 402 with a reason rather than an error inside
    the facilitator (which would read as an outage), and so one nonce cannot be claimed
    under two spellings. Raises ``ValueError``.
    """
    parsed = ExactEIP3009Payload.from_dict(payload.payload)
    authorization = parsed.authorization
    checks = (
        (_ADDRESS, authorization.from_address),
        (_ADDRESS, authorization.to),
        (_NONCE, authorization.nonce),
        (_UINT256, authorization.value),
        (_UINT256, authorization.valid_after),
        (_UINT256, authorization.valid_before),
        (_HEX, parsed.signature),
    )
    if not all(isinstance(value, str) and pattern.fullmatch(value) for pattern, value in checks):
        raise ValueError("malformed EIP-3009 authorization")
    return authorization


def _live_claim(key: dict[str, str]) -> PaymentClaim | None:
    return PaymentClaim.objects.filter(**key).exclude(state=PaymentClaim.State.RELEASED).first()


def _settling_abandoned(claim: PaymentClaim) -> bool:
    """Settling for longer than a settle call can last (the SDK retries a pending one once).

    A claim settling for less is another request's, being served right now: for this
    one the authorization is simply used.
    """
    if claim.state != PaymentClaim.State.SETTLING:
        return False
    longest = datetime.timedelta(seconds=2 * settings.X402_FACILITATOR_TIMEOUT + SETTLEMENT_SECONDS)
    return claim.updated_at < timezone.now() - longest


def _already_used(refuse: dict) -> PaymentRequiredError:
    return _refuse(
        reason="payment_already_used",
        message="This authorization has already paid for a call; sign a new one.",
        **refuse,
    )


def _reconcile_pending(
    claim: PaymentClaim,
    *,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
) -> VerifiedPayment:
    """The caller retries with an authorization whose settlement went unconfirmed: ask again.

    An EIP-3009 authorization can only move money to our own ``payTo``, so a facilitator
    that now reports its nonce as used means the first settlement went through: the call is
    paid and this retry is served without a second settlement. (On a real chain the payer
    could instead have cancelled the authorization, an on-chain act that costs more in gas
    than the call it would win.)
    """
    taken = PaymentClaim.objects.filter(pk=claim.pk, state=PaymentClaim.State.PENDING).update(
        state=PaymentClaim.State.SETTLING
    )
    if not taken:
        raise SettlementPending(details={"reason": "settlement_pending"})
    try:
        result = resource_server().settle_payment(payload, requirements)
    except (*FACILITATOR_ERRORS, FacilitatorUnavailable) as exc:
        _set_claim(claim, state=PaymentClaim.State.PENDING)
        raise SettlementPending(details={"reason": "facilitator_no_answer"}) from exc
    _record_settlement(claim, result)
    if result.success or result.error_reason == ERR_NONCE_ALREADY_USED:
        _set_claim(claim, state=PaymentClaim.State.SETTLED, outcome="charged")
        logger.info("billing.reconciled", extra={"route": claim.route, "payer": claim.payer})
        settled = result.model_copy(update={"success": True, "error_reason": None})
        return VerifiedPayment(
            payload=payload, requirements=requirements, claim=claim, settled=settled
        )
    # Any other answer leaves the claim pending for staff: a retry cannot prove the first
    # settlement failed, and releasing it could let one payment serve two calls.
    _set_claim(claim, state=PaymentClaim.State.PENDING)
    raise SettlementPending(details={"reason": result.error_reason or "settlement_pending"})


# --- the outcome --------------------------------------------------------------


def release_call(*, call: PricedCall, outcome: str) -> None:
    """The outcome is not charged: give back the trial call or free the authorization."""
    if call.payment is None:
        trial_refund(client_ip=call.client_ip, day=call.day)
        return
    if call.payment.settled is not None:
        return  # paid by an earlier attempt whose answer was lost; nothing to give back
    _set_claim(call.payment.claim, state=PaymentClaim.State.RELEASED, outcome=outcome)
    logger.info("billing.released", extra={"route": call.route.name, "outcome": outcome})


def settle_call(*, call: PricedCall) -> dict[str, str]:
    """The outcome is charged: settle before the answer leaves; returns headers to add.

    A facilitator that could not be reached releases the claim (503, nothing charged). One
    that was reached but gave no definite answer leaves the settlement pending: 503 that
    says so and keeps the claim, never an invitation to pay again.
    """
    headers = {"Access-Control-Expose-Headers": EXPOSED_HEADERS}
    if call.payment is None:
        trial_record_use(
            client_ip=call.client_ip,
            day=call.day,
            route=call.route.name,
            request_id=call.request_id,
        )
        return headers
    payment = call.payment
    claim = payment.claim
    if payment.settled is not None:
        return _settled_headers(headers, payment, payment.settled)
    _set_claim(claim, state=PaymentClaim.State.SETTLING)
    try:
        result = resource_server().settle_payment(payment.payload, payment.requirements)
    except (httpx.ConnectError, httpx.ConnectTimeout, FacilitatorUnavailable) as exc:
        _record_settlement(
            claim,
            SettleResponse(
                success=False, error_reason="unreachable", transaction="", network=claim.network
            ),
        )
        _set_claim(claim, state=PaymentClaim.State.RELEASED, outcome="facilitator_unavailable")
        raise FacilitatorUnavailable(details={"reason": "settle_unreachable"}) from exc
    except FACILITATOR_ERRORS as exc:
        logger.warning("billing.settle_pending", extra={"error": str(exc)})
        _record_settlement(
            claim,
            SettleResponse(
                success=False,
                error_reason="settlement_pending",
                error_message=str(exc)[:200],
                transaction="",
                network=claim.network,
            ),
        )
        _set_claim(claim, state=PaymentClaim.State.PENDING, outcome="settlement_pending")
        raise SettlementPending(details={"reason": "facilitator_no_answer"}) from exc
    _record_settlement(claim, result)
    if result.success:
        _set_claim(claim, state=PaymentClaim.State.SETTLED, outcome="charged")
        logger.info(
            "billing.settled",
            extra={
                "route": call.route.name,
                "payer": claim.payer,
                "transaction": result.transaction,
            },
        )
        return _settled_headers(headers, payment, result)
    if result.error_reason == ERR_SETTLEMENT_PENDING:
        _set_claim(claim, state=PaymentClaim.State.PENDING, outcome="settlement_pending")
        raise SettlementPending(
            details={"reason": "settlement_pending", "transaction": result.transaction}
        )
    _set_claim(
        claim,
        state=PaymentClaim.State.RELEASED,
        outcome=f"settle_refused:{result.error_reason}"[:96],
    )
    raise _refuse(
        route=call.route,
        reason=result.error_reason or "settlement_refused",
        client_ip=call.client_ip,
        request_id=call.request_id,
        payer=claim.payer,
        message="The facilitator refused to settle this payment; nothing was charged.",
    )


def _settled_headers(
    headers: dict[str, str], payment: VerifiedPayment, result: SettleResponse
) -> dict[str, str]:
    headers[PAYMENT_RESPONSE_HEADER] = encode_payment_response_header(result)
    if payment.legacy_header:
        headers[X_PAYMENT_RESPONSE_HEADER] = headers[PAYMENT_RESPONSE_HEADER]
    return headers


def _set_claim(claim: PaymentClaim, *, state: str, outcome: str | None = None) -> None:
    claim.state = state
    fields = ["state", "updated_at"]
    if outcome is not None:
        claim.outcome = outcome
        fields.append("outcome")
    claim.save(update_fields=fields)


def _record_settlement(claim: PaymentClaim, result: SettleResponse) -> None:
    Settlement.objects.create(
        claim=claim,
        facilitator=facilitator_name(),
        success=result.success,
        transaction=result.transaction or "",
        network=result.network or claim.network,
        payer=(result.payer or claim.payer).lower(),
        amount=claim.amount,
        error_reason=(result.error_reason or "")[:200],
    )
