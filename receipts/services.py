"""Issue receipts with the active key, check receipts, and manage the signing keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from attest.logs import client_request_id_var
from attest_core.checks import compare_with_claims
from attest_core.jws import REASONS, ReceiptRefused, check_compact, sign_compact
from attest_core.payloads import PageClaims, ReceiptClaims, ResultClaims
from receipts.keyring import KeyEntry, ensure_key, rotate_key
from receipts.log import log_append_receipt
from receipts.selectors import signing_keyring


@dataclass(frozen=True)
class IssuedReceipt:
    """A signed receipt and its leaf index in the transparency log."""

    receipt: str
    log_index: int

    def answer_fields(self) -> dict[str, Any]:
        """What every answer carrying a receipt ends with, before ``tier``."""
        return {"receipt": self.receipt, "receipt_log_index": self.log_index}


def issue_receipt(
    *,
    route: str,
    request_id: str,
    tier: str,
    pages: list[PageClaims],
    results: list[ResultClaims],
    extra: dict | None = None,
    client_request_id: str | None = None,
) -> IssuedReceipt:
    """Sign what one answer found as a compact JWS (EdDSA, kid and typ in the header),
    and append it to the transparency log before anyone can be answered with it.

    ``request_id`` is the server's own ID for the call. The caller's X-Request-ID is
    signed apart as ``client_request_id``: given, or else the current request's.

    The receipt is returned only once its leaf is committed (with the caller's
    transaction, when there is one), so every answer that carries a receipt carries a
    logged one; a crash between signing and logging leaves a receipt nobody received.
    """
    claims = ReceiptClaims(
        issuer=settings.ATTEST_PUBLIC_URL,
        issued_at=timezone.now(),
        route=route,
        request_id=request_id,
        tier=tier,
        pages=list(pages),
        results=list(results),
        extra=extra or {},
        client_request_id=client_request_id or client_request_id_var.get(),
    )
    key = signing_keyring().signing_key()
    receipt = sign_compact(claims.to_bytes(), key=key.signer, kid=key.kid)
    return IssuedReceipt(receipt=receipt, log_index=log_append_receipt(receipt))


@dataclass(frozen=True)
class ReceiptCheck:
    """The answer of /v1/receipt/verify."""

    valid: bool
    kid: str | None = None
    reason: str | None = None
    claims: dict[str, Any] | None = None
    key_state: str | None = None
    checks: dict[str, Any] | None = field(default=None)

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"valid": self.valid, "kid": self.kid}
        if self.valid:
            body["claims"] = self.claims
            claims = self.claims or {}
            body["issued_at"] = claims.get("issued_at")
            body["request_id"] = claims.get("request_id")
            body["client_request_id"] = claims.get("client_request_id")
            body["key_state"] = self.key_state
            if self.checks is not None:
                body["checks"] = self.checks
        else:
            if self.reason is None:
                raise ValueError("a receipt check that failed names its reason")
            body["reason"] = self.reason
            body["message"] = REASONS[self.reason]
        return body


def verify_receipt(
    *, receipt: str, text: str | None = None, quote: str | None = None, page: int = 0
) -> ReceiptCheck:
    """Check a receipt against the published keys; optionally compare it with text or quote."""
    ring = signing_keyring()
    try:
        checked = check_compact(receipt, public_keys=ring.public_keys())
    except ReceiptRefused as refused:
        return ReceiptCheck(valid=False, kid=refused.kid, reason=refused.reason)
    state = next(entry.state for entry in ring.entries if entry.kid == checked.kid)
    checks = None
    if text is not None or quote is not None:
        checks = compare_with_claims(checked.claims, text=text, quote=quote, page=page)
    return ReceiptCheck(
        valid=True, kid=checked.kid, claims=checked.claims, key_state=state, checks=checks
    )


def signing_key_ensure() -> tuple[KeyEntry, bool]:
    """Make sure a key can sign, creating a development key in a key directory if none."""
    return ensure_key(settings.ATTEST_SIGNING_KEYS, now=timezone.now())


def signing_key_rotate() -> tuple[KeyEntry, list[KeyEntry]]:
    """Create a new signing key and make it active; older keys keep verifying."""
    return rotate_key(settings.ATTEST_SIGNING_KEYS, now=timezone.now())
