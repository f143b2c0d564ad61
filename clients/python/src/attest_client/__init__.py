"""Python client of the Attest API: ``Attest(base_url, payer_key=None, credential=None)``.

One method per route, answers as the API gives them (typed in ``attest_client.types``),
x402 payment through the ``x402`` SDK when a payer key is given, a lost paid answer fetched
again with the same payment, and ``check_receipt`` offline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attest_client.check import check_receipt
    from attest_client.client import Attest
    from attest_client.errors import AttestError

__all__ = ["Attest", "AttestError", "check_receipt"]

# Imported on first use (PEP 562): the offline checker loads the normaliser and its
# passages (numpy, a stemmer), seconds on a busy machine, which `attest mcp` and the other
# commands that never check a receipt should not wait for (an MCP host times a stdio
# server's first answer).
_LAZY = {
    "Attest": "attest_client.client",
    "AttestError": "attest_client.errors",
    "check_receipt": "attest_client.check",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'attest_client' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)
