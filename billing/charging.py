"""The one charging table: which outcomes of a priced call are settled (both seeds)."""

from __future__ import annotations

from dataclasses import dataclass

from billing.pricing import priced_route


@dataclass(frozen=True)
class ChargingRule:
    outcome: str
    status: int
    code: str | None  # the error code, or None for a result about the page
    charged: bool


# Every rule of the verify/quote and verify/citations seeds. The charging table on
# /docs/payments is rendered from this list, so the two cannot drift apart.
_TRIAL_MAX_CITATIONS = priced_route("verify/citations").trial_max_size

CHARGING_RULES: tuple[ChargingRule, ...] = (
    ChargingRule(
        "Malformed request: a missing or bad field, URL, quote or option, or a list over its size",
        400,
        "invalid_request",
        False,
    ),
    ChargingRule("Body is not valid JSON", 400, "invalid_json", False),
    ChargingRule("Address is private, loopback or otherwise blocked", 403, "blocked", False),
    ChargingRule(
        "robots.txt disallows the page (before or after payment)", 403, "robots_disallowed", False
    ),
    ChargingRule("Host name does not resolve (every URL of a batch)", 422, "host_not_found", False),
    ChargingRule(
        "Quote too costly to match fuzzily (every citation of a batch)",
        422,
        "match_too_costly",
        False,
    ),
    ChargingRule(
        f"Unpaid batch of more than {_TRIAL_MAX_CITATIONS} citations: the offer, reason "
        "trial_too_large",
        402,
        "payment_required",
        False,
    ),
    ChargingRule(
        "Payment identifier already used for another request, or its answer no longer kept",
        409,
        "payment_identifier_conflict",
        False,
    ),
    ChargingRule("Rate limited, including uncharged failed batches", 429, "rate_limited", False),
    ChargingRule(
        "Match or PDF queue full (before the offer, or after payment is verified)",
        503,
        "over_capacity",
        False,
    ),
    ChargingRule("PDF on an edge server", 501, "not_on_edge", False),
    ChargingRule("Unexpected server error", 500, "internal_error", False),
    ChargingRule("Payment facilitator unreachable", 503, "facilitator_unavailable", False),
    ChargingRule(
        "DNS resolver failed or timed out (not a missing name)", 503, "dns_unavailable", False
    ),
    ChargingRule("Database or shared cache unavailable", 503, "unavailable", False),
    ChargingRule("Page result: real content", 200, None, True),
    ChargingRule("Page result: HTTP error page such as a 404", 200, None, True),
    ChargingRule("Page result: bot wall, JavaScript shell or empty page", 200, None, True),
    ChargingRule("Page result: fetch timed out or page too large", 200, None, True),
    ChargingRule("Batch with some citations failed or some hosts not found", 200, None, True),
)

UNCHARGED_CODES = frozenset(rule.code for rule in CHARGING_RULES if not rule.charged)


def response_is_charged(*, status: int, charged: bool | None) -> bool:
    """A normal (2xx) answer is a page result and charged, unless the view says otherwise.

    Errors never reach this: an ``AttestError`` raised by a priced view is never charged,
    whether or not the table lists its code, because charging for an answer the caller did
    not get is the one mistake to avoid.
    """
    if not 200 <= status < 300:
        return False
    return charged is not False
