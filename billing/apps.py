"""Billing's app config, and the loader of the payment stack that undoes its interpreter-wide
side effect."""

import importlib
import sys

from django.apps import AppConfig

# CPython's default. Deep enough for every code path here; deeper lets a nested JSON body
# of ~100k brackets overflow the C stack inside the json parser and kill the worker.
RECURSION_LIMIT = 1000


def load_payment_stack() -> None:
    """Import the x402 SDK's EVM half once, and put the recursion limit back.

    eth_account (the x402 EVM scheme) imports py_ecc, which raises the interpreter's recursion
    limit to 100000 on import. A serving process calls this before its first request
    (attest/wsgi.py, through attest.registry.prepare_to_serve), so the raised limit cannot
    turn a hostile request body into a segfault.
    It is not done at app load: the import takes a second or more, which every management
    command would pay; the code that needs the SDK's EVM half imports it where it is used.
    """
    importlib.import_module("eth_account")
    # The scheme every offer and verification builds on (web3 under it): seconds to import,
    # which the first priced request would otherwise wait for.
    importlib.import_module("x402.mechanisms.evm.exact")
    sys.setrecursionlimit(min(sys.getrecursionlimit(), RECURSION_LIMIT))


def prepare_discovery() -> None:
    """Build every priced route's bazaar extension (billing.discovery), imported here and
    not at app load: the x402 SDK it needs is a third of a second no command should pay."""
    from billing.discovery import discovery_prepare

    discovery_prepare()


class BillingConfig(AppConfig):
    name = "billing"

    def ready(self) -> None:
        from attest.registry import register_serving_hook

        register_serving_hook(load_payment_stack)
        register_serving_hook(prepare_discovery)
