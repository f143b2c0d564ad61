"""Billing's app config: loads the payment stack and undoes its interpreter-wide side effect."""

import importlib
import sys

from django.apps import AppConfig

# CPython's default. Deep enough for every code path here; deeper lets a nested JSON body
# of ~100k brackets overflow the C stack inside the json parser and kill the worker.
RECURSION_LIMIT = 1000


class BillingConfig(AppConfig):
    name = "billing"

    def ready(self) -> None:
        # eth_account (the x402 EVM scheme) imports py_ecc, which raises the interpreter's
        # recursion limit to 100000 on import. Import it now, once, and put the limit back,
        # so the raised limit cannot turn a hostile request body into a segfault.
        importlib.import_module("eth_account")
        sys.setrecursionlimit(min(sys.getrecursionlimit(), RECURSION_LIMIT))
