"""An in-memory EVM "chain" for the facilitator test server, which runs outside the test's DB."""

from __future__ import annotations

import threading
from typing import Any

from billing.local_facilitator import LedgerSigner


class MemoryChainSigner(LedgerSigner):
    """The local facilitator's signer with its ledger in a dict instead of the database."""

    def __init__(self, network: str) -> None:
        super().__init__(network)
        self._lock = threading.Lock()
        self._transfers: dict[str, dict[str, Any]] = {}
        self._revert: str | None = None

    def revert_next(self, reason: str) -> None:
        self._revert = reason

    def write_contract(self, *args: Any, **kwargs: Any) -> str:
        if self._revert:
            reason, self._revert = self._revert, None
            raise RuntimeError(f"execution reverted: {reason}")
        return super().write_contract(*args, **kwargs)

    def _used(self, token, payer, nonce) -> bool:
        nonce_hex = nonce.lower() if isinstance(nonce, str) else "0x" + nonce.hex()
        return any(
            t["token"] == token.lower() and t["payer"] == payer.lower() and t["nonce"] == nonce_hex
            for t in self._transfers.values()
        )

    def _record(self, transfer: dict[str, Any]) -> bool:
        with self._lock:
            if self._used(transfer["token"], transfer["payer"], transfer["nonce"]):
                return False
            self._transfers[transfer["transaction"]] = {
                **transfer,
                "block": len(self._transfers) + 1,
            }
            return True

    def _fetch(self, tx_hash: str) -> dict[str, Any]:
        return self._transfers[tx_hash]
