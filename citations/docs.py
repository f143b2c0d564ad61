"""What the fact ledger registers for the docs pages: its limits and statuses (its routes'
errors are registered by ``citations.api.route_errors``, imported here for discovery)."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from rest_framework.fields import IntegerField

from attest.errors import InvalidRequest
from attest.registry import (
    Limit,
    bytes_text,
    rate_text,
    refused_text,
    register_limits,
    register_table,
)
from citations.api import route_errors  # noqa: F401 (registers the routes' errors)
from citations.api.serializers import MAX_MESSAGE_BYTES, MAX_MESSAGES, RecallIn
from citations.extract.intervals import STATUSES
from citations.selectors import (
    PAGE_BYTES,
    RESOLVE_MAX_LIMIT,
)
from citations.services.predicates import (
    DESCRIPTION_MAX_CHARS,
    NAME_PATTERN,
)


def _ledger() -> list[Limit]:
    recall_limit = cast(IntegerField, RecallIn().fields["limit"])
    return [
        Limit(
            "Messages in one ingest request", f"1 to {MAX_MESSAGES}", refused_text(InvalidRequest)
        ),
        Limit("One message's text", bytes_text(MAX_MESSAGE_BYTES), refused_text(InvalidRequest)),
        Limit("A declared predicate's name", NAME_PATTERN, refused_text(InvalidRequest)),
        Limit(
            "A declared predicate's description",
            f"at most {DESCRIPTION_MAX_CHARS} characters",
            refused_text(InvalidRequest),
        ),
        Limit(
            "Facts one recall returns (limit)",
            f"{recall_limit.min_value} to {recall_limit.max_value}, default {recall_limit.default}",
            refused_text(InvalidRequest),
        ),
        Limit(
            "Evidence rows in one resolve page",
            f"1 to {RESOLVE_MAX_LIMIT}",
            f"{refused_text(InvalidRequest)} (details.limit and details.count)",
        ),
        Limit(
            "Quote and context text in one resolve page",
            bytes_text(PAGE_BYTES),
            "the page stops early and next says where to go on; one source alone "
            "over it: 422 citation_limit",
        ),
        Limit(
            "Requests per credential",
            rate_text(settings.ATTEST_LEDGER_RATE),
            "429 rate_limited with Retry-After, nothing stored",
            "ATTEST_LEDGER_RATE",
        ),
    ]


FACT_STATUS_MEANING = {
    "current": "believed now and true with no end",
    "validity_closed": "believed, but true only until a date (for instance superseded by a "
    "newer value: superseded_by names it)",
    "knowledge_closed": "no longer believed: this version was replaced by a later one",
    "retracted": "withdrawn: retraction says by whom, when and why",
    "reinterpreted": "replaced by a rebuild: reinterpreted_by names the generation",
}


def fact_statuses() -> list[tuple[str, str]]:
    """Every status a fact version can have (citations.extract.intervals), with its meaning."""
    return [(status, FACT_STATUS_MEANING[status]) for status in STATUSES]


register_limits("Fact ledger", _ledger)
register_table("fact statuses", fact_statuses)
