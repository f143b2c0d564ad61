"""The price list: what each priced route costs and how long its work may take."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PricedRoute:
    name: str
    price: str  # US dollars, as the x402 SDK's money parser reads it ("$0.01")
    description: str
    # Longest the route's own work may take; an authorization must outlive it plus settlement.
    work_seconds: int
    # Largest request (in the route's own units, e.g. citations) a free-trial call may cover.
    trial_max_size: int | None = None
    # Largest request one payment buys (a batch route's list limit; the route reads it here).
    max_size: int | None = None


# The validity window offered to payers. The slowest route's work plus settlement fits in it
# several times over, so a client that signs on receipt of the offer is never cut short.
MAX_TIMEOUT_SECONDS = 600
# Time kept back for settlement after the work, when judging whether an authorization lasts.
SETTLEMENT_SECONDS = 30
RAIL = "x402"

# The seed's batch sizes: what one payment for a batch buys (verification reads them here).
_MAX_QUOTES = 20
_MAX_CITATIONS = 10

PRICED_ROUTES: dict[str, PricedRoute] = {
    route.name: route
    for route in (
        PricedRoute("verify/quote", "$0.01", "Verify one quote on one page", work_seconds=90),
        PricedRoute(
            "verify/quotes",
            "$0.08",
            f"Verify up to {_MAX_QUOTES} quotes on one page",
            work_seconds=120,
            max_size=_MAX_QUOTES,
        ),
        PricedRoute(
            "verify/citations",
            "$0.10",
            f"Verify up to {_MAX_CITATIONS} quote/URL pairs in one batch",
            work_seconds=180,
            trial_max_size=3,
            max_size=_MAX_CITATIONS,
        ),
        PricedRoute("fetch", "$0.01", "Fetch and classify one page", work_seconds=90),
    )
}


# POST /v1/credits: prepaid credit bought over x402, its price the amount asked for. It is
# not in PRICED_ROUTES (no fixed price, no trial, never paid from credit itself).
TOP_UP_ROUTE = "credits"
TOP_UP_WORK_SECONDS = 30


def top_up_route(amount: str) -> PricedRoute:
    """The x402 route that sells ``amount`` US dollars of prepaid credit ("5.00")."""
    return PricedRoute(
        TOP_UP_ROUTE,
        f"${amount}",
        f"US${amount} of prepaid credit for priced calls",
        work_seconds=TOP_UP_WORK_SECONDS,
    )


def priced_route(name: str) -> PricedRoute:
    try:
        return PRICED_ROUTES[name]
    except KeyError:
        raise LookupError(f"{name!r} is not a priced route; add it to PRICED_ROUTES.") from None
