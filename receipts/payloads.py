"""The typed claims a receipt signs; re-exported from the pure core for the other apps."""

from attest_core.payloads import (
    PageClaims,
    PassageClaims,
    ReceiptClaims,
    ResultClaims,
    quote_sha256,
)

__all__ = ["PageClaims", "PassageClaims", "ReceiptClaims", "ResultClaims", "quote_sha256"]
