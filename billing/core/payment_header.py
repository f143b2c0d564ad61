"""Reading a PAYMENT-SIGNATURE (or v1 X-PAYMENT) header into a typed x402 payment."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from x402 import PaymentPayload, PaymentRequirements
from x402.http import safe_base64_decode
from x402.schemas import PaymentPayloadV1

from attest_core.canonical import canonical_json

# A real payment header is well under 2 KB; anything far larger is refused before decoding.
MAX_PAYMENT_HEADER_CHARS = 16 * 1024

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_NONCE = re.compile(r"0x[0-9a-fA-F]{64}")
_UINT256 = re.compile(r"[0-9]{1,78}")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


class MalformedAuthorization(ValueError):
    """The payload carries no EIP-3009 authorization in its one canonical spelling."""


@dataclass(frozen=True)
class Authorization:
    """The fields of an EIP-3009 authorization that billing keys and judges a payment by."""

    payer: str  # lower-case 0x address
    nonce: str  # lower-case 0x, 32 bytes
    valid_before: int  # Unix seconds; may be as large as 2**256 - 1


def _parse(header: str) -> PaymentPayload | PaymentPayloadV1 | None:
    """The header as an x402 v2 or v1 payload, or None.

    Only a JSON object naming ``x402Version`` 2 (or 1, from v1's X-PAYMENT) is read: the
    SDK's decoder would take any other version, or none, as v2.
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
    model = PaymentPayloadV1 if version == 1 else PaymentPayload
    try:
        return model.model_validate(data)
    except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
        return None


def decode_payment(header: str, requirement: PaymentRequirements) -> PaymentPayload | None:
    """The client's payment as a v2 payload bound to our own requirement, or None.

    A v1 payload names no requirement; it is bound to the server's own, which is what
    verification checks it against anyway.
    """
    decoded = _parse(header)
    if decoded is None or isinstance(decoded, PaymentPayload):
        return decoded
    from x402.mechanisms.evm.v1.constants import V1_NETWORK_CHAIN_IDS  # slow: see money.py

    chain_id = V1_NETWORK_CHAIN_IDS.get(decoded.network)
    if decoded.scheme != requirement.scheme or f"eip155:{chain_id}" != requirement.network:
        return None
    return PaymentPayload(payload=decoded.payload, accepted=requirement)


def read_authorization(payload: dict) -> Authorization:
    """The EIP-3009 authorization in a payload's inner object, each field in canonical form.

    Checked here, so a client's typo is a 402 with a reason rather than an error inside
    the facilitator (which would read as an outage), and so one nonce cannot be claimed
    under two spellings. Raises ``MalformedAuthorization``.
    """
    from x402.mechanisms.evm.types import ExactEIP3009Payload  # slow to import: see money.py

    try:
        parsed = ExactEIP3009Payload.from_dict(payload)
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
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedAuthorization(str(exc)) from None
    if not all(isinstance(value, str) and pattern.fullmatch(value) for pattern, value in checks):
        raise MalformedAuthorization("an authorization field is not in its canonical form")
    return Authorization(
        payer=authorization.from_address.lower(),
        nonce=authorization.nonce.lower(),
        valid_before=int(authorization.valid_before),
    )


def payment_digest(payload: PaymentPayload) -> str:
    """SHA-256 of the signed authorization and its signature: what makes two payments "the same".

    Only the inner payload counts, so a v1 retry of a v2 payment (or the reverse) with the
    same signed authorization is the same payment.
    """
    return hashlib.sha256(canonical_json(payload.payload)).hexdigest()
