"""The x402 resource server for this process, built on first use (never at import)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import httpx
from django.conf import settings
from x402 import ResourceConfig, x402ResourceServerSync
from x402.http import FacilitatorConfig, HTTPFacilitatorClientSync

from billing.exceptions import FacilitatorUnavailable
from billing.pricing import MAX_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from x402 import FacilitatorClientSync

_lock = threading.Lock()
_servers: dict[tuple[str, str, int], x402ResourceServerSync] = {}

# Errors that mean the facilitator could not be asked or gave no usable answer.
FACILITATOR_ERRORS = (httpx.HTTPError, ValueError, RuntimeError)


def facilitator_name() -> str:
    return settings.X402_FACILITATOR_URL or "local"


def resource_server() -> x402ResourceServerSync:
    """The SDK resource server for the configured facilitator and network.

    Initialising asks the facilitator what it supports, so it happens on the first priced
    request, not at import; a failure is not cached, so the next request tries again.
    """
    # The SDK's EVM half (eth_account, web3) is slow to import: loaded by the first call
    # that needs it, so a management command does not pay for it (billing.apps).
    from x402.mechanisms.evm.exact import ExactEvmServerScheme

    from billing.local_facilitator import build_local_facilitator

    key = (settings.X402_FACILITATOR_URL, settings.X402_NETWORK, settings.X402_FACILITATOR_TIMEOUT)
    with _lock:
        server = _servers.get(key)
        if server is not None:
            return server
        client: FacilitatorClientSync
        if settings.X402_FACILITATOR_URL:
            client = HTTPFacilitatorClientSync(
                FacilitatorConfig(
                    url=settings.X402_FACILITATOR_URL, timeout=settings.X402_FACILITATOR_TIMEOUT
                )
            )
        else:
            client = build_local_facilitator(settings.X402_NETWORK)
        server = x402ResourceServerSync(client)
        # The SDK's own scheme misses its own protocol: it leaves payment_flows an
        # unannotated dict literal, which mypy does not read as Mapping[str, PaymentFlowConfig].
        server.register(settings.X402_NETWORK, ExactEvmServerScheme())  # type: ignore[arg-type]
        try:
            server.initialize()
        except FACILITATOR_ERRORS as exc:
            raise FacilitatorUnavailable(details={"reason": "supported_failed"}) from exc
        _servers[key] = server
        return server


def resource_config(*, price: str) -> ResourceConfig:
    return ResourceConfig(
        scheme="exact",
        network=settings.X402_NETWORK,
        pay_to=settings.X402_PAY_TO,
        price=price,
        max_timeout_seconds=MAX_TIMEOUT_SECONDS,
    )
