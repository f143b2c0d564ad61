"""Sign a receipt as a compact JWS and check one, naming why a bad receipt is refused."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from joserfc import jws
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwa import EdDSAAlgorithm
from joserfc.jwk import OKPKey

from attest_core.canonical import b64url_decode_strict

ALGORITHM = "EdDSA"
RECEIPT_TYP = "attest-receipt+jwt"
# Far above any real receipt (a batch of 10 results with passages is a few KiB).
MAX_RECEIPT_CHARS = 256 * 1024


class _EdDSA(EdDSAAlgorithm):
    # RFC 9864 prefers the fully specified "Ed25519" name, but "EdDSA" is what the published
    # contract promises and what every JOSE library (PyJWT, jose, nimbus) verifies today;
    # with Ed25519 keys only, the two mean the same signature. (joserfc declares the
    # attribute str | None, but its EdDSAAlgorithm narrows it to str by assigning one.)
    security_warning = None  # type: ignore[assignment]


class _ReceiptRegistry(jws.JWSRegistry):
    """EdDSA only, and a payload cap matched to ours instead of joserfc's 128 kB default."""

    algorithms = {ALGORITHM: _EdDSA()}
    recommended = [ALGORITHM]
    max_payload_length = MAX_RECEIPT_CHARS


REGISTRY = _ReceiptRegistry(algorithms=[ALGORITHM])

REASONS = {
    "malformed": "The receipt is not a compact JWS (three base64url parts with a JSON header).",
    "too_large": "The receipt is far longer than any receipt this service issues.",
    "unsupported_algorithm": "The receipt is not signed with EdDSA.",
    "wrong_type": f"The receipt's typ header is not {RECEIPT_TYP}.",
    "missing_kid": "The receipt's header names no key (kid).",
    "unknown_key": "The receipt names a key this service has never published.",
    "bad_signature": "The signature does not match: the receipt was altered or not signed by us.",
    "malformed_payload": "The signed payload is not a receipt this service issues.",
}


class ReceiptRefused(Exception):
    """A receipt that does not check out, with a stable reason code."""

    def __init__(self, reason: str, *, kid: str | None = None) -> None:
        self.reason = reason
        self.kid = kid
        self.message = REASONS[reason]
        super().__init__(self.message)


@dataclass(frozen=True)
class CheckedReceipt:
    kid: str
    header: dict[str, Any]
    claims: dict[str, Any] = field(default_factory=dict)


def sign_compact(payload: bytes, *, key: OKPKey, kid: str, typ: str = RECEIPT_TYP) -> str:
    """Compact JWS over the payload bytes, with alg, kid and our typ in the protected header.

    ``typ`` tells a receipt from a transparency log's tree head signed by the same keys.
    """
    header = {"alg": ALGORITHM, "kid": kid, "typ": typ}
    return jws.serialize_compact(header, payload, key, registry=REGISTRY)


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _reportable_kid(kid: Any) -> str | None:
    """The header's kid if it can be echoed back: a JSON escape can smuggle in a lone surrogate."""
    if not isinstance(kid, str) or len(kid) > 128:
        return None
    try:
        kid.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return kid


def check_compact(token: str, *, public_keys: Mapping[str, OKPKey]) -> CheckedReceipt:
    """Return the verified header and claims, or raise ReceiptRefused with the reason."""
    if len(token) > MAX_RECEIPT_CHARS:
        raise ReceiptRefused("too_large")
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        raise ReceiptRefused("malformed")
    try:
        header_bytes, payload_bytes, _ = (b64url_decode_strict(part) for part in parts)
    except ValueError:
        raise ReceiptRefused("malformed") from None
    header = _json_object(header_bytes)
    if header is None:
        raise ReceiptRefused("malformed")
    kid = _reportable_kid(header.get("kid"))
    if header.get("alg") != ALGORITHM:
        raise ReceiptRefused("unsupported_algorithm", kid=kid)
    if header.get("typ") != RECEIPT_TYP:
        raise ReceiptRefused("wrong_type", kid=kid)
    if kid is None:
        raise ReceiptRefused("missing_kid")
    key = public_keys.get(kid)
    if key is None:
        raise ReceiptRefused("unknown_key", kid=kid)
    try:
        jws.deserialize_compact(token, key, registry=REGISTRY)
    except BadSignatureError:
        raise ReceiptRefused("bad_signature", kid=kid) from None
    except (JoseError, ValueError, TypeError):
        raise ReceiptRefused("malformed", kid=kid) from None
    claims = _json_object(payload_bytes)
    if claims is None or not isinstance(claims.get("v"), int):
        raise ReceiptRefused("malformed_payload", kid=kid)
    return CheckedReceipt(kid=kid, header=header, claims=claims)
