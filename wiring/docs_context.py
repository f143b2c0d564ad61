"""The context each docs page renders with (wiring.docs names them): the figures a page
states, read from the code and from what the apps registered.

Imported by the first docs page served, not by the URLconf: it reaches into every app
(serializers, the matcher, billing's facilitators), which no manage.py command needs.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from attest import registry
from attest_core.check_findings import EXIT_CODES, FAILURE_KINDS
from attest_core.jws import ALGORITHM, REASONS, RECEIPT_TYP
from attest_core.passages import MAX_PASSAGES, SCORER
from attest_core.payloads import PAYLOAD_VERSION
from attest_core.tree_head import TREE_HEAD_TYP
from billing.charging import CHARGING_RULES
from billing.facilitators import facilitator_name
from billing.pricing import MAX_TIMEOUT_SECONDS, PRICED_ROUTES, RAIL
from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION
from citations.api.serializers import MAX_MESSAGE_BYTES, MAX_MESSAGES, ResolveIn
from citations.extract.extractor import EXTRACTOR_VERSION
from citations.extract.predicates import BUILTIN_NAMES, BUILTIN_PREDICATES
from citations.selectors import (
    CONTEXT_BYTES,
    INVENTORY_DEFAULT_LIMIT,
    INVENTORY_MAX_LIMIT,
    PAGE_BYTES,
    RECALL_DEFAULT_LIMIT,
    RECALL_MAX,
)
from citations.selectors.changes import (
    CHANGES_DEFAULT_LIMIT,
    CHANGES_MAX_LIMIT,
    SUBJECTS_DEFAULT_LIMIT,
    SUBJECTS_MAX_LIMIT,
)
from citations.selectors.ranked import RANKED_DEFAULT_LIMIT, RANKED_MAX_LIMIT
from citations.selectors.web_evidence import REASONS as WEB_EVIDENCE_REASONS
from citations.services.placement import AUTHORED
from citations.services.predicates import DESCRIPTION_MAX_CHARS as PREDICATE_DESCRIPTION_MAX
from citations.services.predicates import NAME_PATTERN as PREDICATE_NAME_PATTERN
from verification.api.serializers import VerifyQuoteInput
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.engine.pace import BUDGETS
from verification.network.addresses import MAX_URL_LENGTH
from verification.pipeline.batches import BATCH_FUZZY_WORK, MAX_CITATIONS, MAX_QUOTES
from verification.pipeline.samples import SAMPLE_QUOTES
from verification.pipeline.steps import MAX_QUOTE_CHARS, MODES
from wiring import docs_guide
from wiring.docs_tables import price_of, prices
from wiring.mcp.tools import TOOLS


def how_it_works() -> dict[str, Any]:
    return docs_guide.how_it_works()


def verify_quote() -> dict[str, Any]:
    threshold = VerifyQuoteInput().fields["threshold"]
    return {
        "errors": registry.errors("POST /v1/verify/quote"),
        "modes": MODES,
        "max_url": f"{MAX_URL_LENGTH:,}",
        "max_quote": f"{MAX_QUOTE_CHARS:,}",
        "threshold": threshold,
        "scorer": SCORER,
        "max_passages": MAX_PASSAGES,
        "fuzzy_work": f"{FUZZY_WORK_PER_CALL:,}",
        "price": price_of("verify/quote"),
        "sample_quotes": SAMPLE_QUOTES,
        "crossref_on": bool(settings.ATTEST_CROSSREF_URL),
        "crossref_paid": BUDGETS["paid"],
        "crossref_trial": BUDGETS["trial"],
    }


def receipt_verify() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/receipt/verify"),
        "reasons": sorted(REASONS.items()),
        "algorithm": ALGORITHM,
        "typ": RECEIPT_TYP,
        "version": PAYLOAD_VERSION,
        "page_claims": registry.table("page claims"),
        "result_claims": registry.table("result claims"),
        "passage_claims": [name for name, _ in registry.table("passage claims")],
        "sample_quote": SAMPLE_QUOTES["fuzzy"],
    }


def receipt_check() -> dict[str, Any]:
    return {"kinds": FAILURE_KINDS, "sample_quote": SAMPLE_QUOTES["fuzzy"]}


def transparency() -> dict[str, Any]:
    routes = ("GET /v1/log/head", "GET /v1/log/proof", "GET /v1/log/consistency")
    return {
        "head_typ": TREE_HEAD_TYP,
        "log_kind": EXIT_CODES["log"],
        "route_errors": [(route, registry.errors(route)) for route in routes],
    }


def payments() -> dict[str, Any]:
    return {
        "prices": prices(),
        "quote_price": price_of("verify/quote"),
        "rules": CHARGING_RULES,
        "errors": registry.errors("payment"),
        "network": settings.X402_NETWORK,
        "pay_to": settings.X402_PAY_TO,
        "rail": RAIL,
        "max_timeout": MAX_TIMEOUT_SECONDS,
        "uncharged_runs": UNCHARGED_RUNS_PER_AUTHORIZATION,
        "trial_calls": settings.ATTEST_TRIAL_CALLS_PER_DAY,
        "facilitator": facilitator_name(),
    }


def limits() -> dict[str, Any]:
    return {"groups": registry.limits()}


def batch(route: str, size: int) -> dict[str, Any]:
    return {
        "errors": registry.errors(f"POST /v1/{route}"),
        "price": price_of(route),
        "max_size": size,
        "trial_max_size": PRICED_ROUTES[route].trial_max_size,
        "fuzzy_work": f"{FUZZY_WORK_PER_CALL:,}",
        "batch_fuzzy_work": f"{BATCH_FUZZY_WORK:,}",
        "modes": MODES,
        "max_quote": f"{MAX_QUOTE_CHARS:,}",
        "sample_quotes": SAMPLE_QUOTES,
    }


def verify_quotes() -> dict[str, Any]:
    return batch("verify/quotes", MAX_QUOTES)


def verify_citations() -> dict[str, Any]:
    return batch("verify/citations", MAX_CITATIONS)


def fetch() -> dict[str, Any]:
    return {"errors": registry.errors("POST /v1/fetch"), "price": price_of("fetch")}


def ledger_ingest() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/observations"),
        "max_messages": MAX_MESSAGES,
        "max_message_bytes": f"{MAX_MESSAGE_BYTES:,}",
        "predicates": BUILTIN_PREDICATES,
        "extractor_version": EXTRACTOR_VERSION,
    }


def ledger_recall() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/recall"),
        "statuses": registry.table("fact statuses"),
        "recall_default": RECALL_DEFAULT_LIMIT,
        "recall_max": RECALL_MAX,
        "ranked_default": RANKED_DEFAULT_LIMIT,
        "ranked_max": RANKED_MAX_LIMIT,
        "predicates": BUILTIN_NAMES,
    }


def ledger_feed(route: str) -> dict[str, Any]:
    return {
        "errors": registry.errors(route),
        "changes_default": CHANGES_DEFAULT_LIMIT,
        "changes_max": CHANGES_MAX_LIMIT,
        "subjects_default": SUBJECTS_DEFAULT_LIMIT,
        "subjects_max": SUBJECTS_MAX_LIMIT,
    }


def ledger_resolve() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/citations/resolve"),
        "limit": ResolveIn().fields["limit"],
        "page_kib": PAGE_BYTES // 1024,
        "context_bytes": CONTEXT_BYTES,
    }


def ledger_rebuilds() -> dict[str, Any]:
    return {"errors": registry.errors("POST /v1/rebuilds"), "extractor_version": EXTRACTOR_VERSION}


def ledger(route: str) -> dict[str, Any]:
    return {
        "errors": registry.errors(route),
        "inventory_default": INVENTORY_DEFAULT_LIMIT,
        "inventory_max": INVENTORY_MAX_LIMIT,
        "authored": AUTHORED,
    }


def ledger_predicates() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/predicates"),
        "builtins": BUILTIN_PREDICATES,
        "first": BUILTIN_PREDICATES[0],
        "pattern": PREDICATE_NAME_PATTERN,
        "description_max": PREDICATE_DESCRIPTION_MAX,
    }


def web_evidence() -> dict[str, Any]:
    return {"errors": registry.errors("POST /v1/facts"), "reasons": WEB_EVIDENCE_REASONS}


def mcp() -> dict[str, Any]:
    return {"tools": TOOLS}


def credits() -> dict[str, Any]:
    return {"network": settings.X402_NETWORK}
