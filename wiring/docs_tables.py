"""The price table the docs pages show: the priced routes this service serves.

The other tables (errors, limits, claims, statuses) are registered by the apps that
enforce them (``<app>/docs.py``, read through ``attest.registry``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.urls import Resolver404, resolve

from billing.pricing import PRICED_ROUTES


@dataclass(frozen=True)
class Price:
    route: str
    path: str
    price: str
    amount: str
    description: str

    @property
    def dollars(self) -> str:
        return f"US{self.price}"


def served(path_: str) -> bool:
    try:
        resolve(path_)
    except Resolver404:
        return False
    return True


def prices() -> list[Price]:
    """The priced routes this service serves, with the atomic amount the x402 SDK offers."""
    from x402.mechanisms.evm.exact import ExactEvmServerScheme  # slow: see billing/money.py

    scheme = ExactEvmServerScheme()
    rows = []
    for route in PRICED_ROUTES.values():
        route_path = f"/v1/{route.name}"
        if served(route_path):
            amount = scheme.parse_price(route.price, settings.X402_NETWORK).amount
            rows.append(Price(route.name, route_path, route.price, amount, route.description))
    return rows


def price_of(name: str) -> Price | None:
    return next((row for row in prices() if row.route == name), None)
