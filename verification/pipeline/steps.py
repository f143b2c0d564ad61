"""The verification pipeline every route shares: quotes checked, pages fetched, matched, signed."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from django.conf import settings

from attest.errors import Blocked, InvalidRequest, Unprocessable
from attest_core.normalise import normalise
from attest_core.passages import ClaimHasNoWords, PassagesResult, find_passages
from receipts.payloads import PageClaims, PassageClaims, ResultClaims, quote_sha256
from verification.crossref.lookups import CallLookups
from verification.engine.doi import doi_named_by_link
from verification.engine.match import MatchResult, MatchTooCostly, Mode, WorkBudget, match_quote
from verification.network.fetch import FetchResult, Target, fetch
from verification.network.politeness import (
    TurnDesk,
    hop_checks,
    mark_fetch_thread,
    take_host_turns,
)
from verification.pipeline.pages import Page, build_pages

MAX_QUOTE_CHARS = 1000
MODES = ("fuzzy", "exact", "passages")
VERDICTS = ("exact", "fuzzy", "none", "passages")


class MatchTooCostlyError(Unprocessable):
    code = "match_too_costly"
    message = (
        'The quote is too long to match fuzzily on a page this size; use "match": "exact" '
        "or a shorter quote."
    )


def normalised_quote(quote: str, *, mode: str, field_name: str = "quote") -> str:
    """The quote as matched, after the checks the seed makes before any work.

    Raises InvalidRequest for an empty quote, one over 1,000 characters after
    normalisation, or a passages claim made only of common words.
    """
    text = normalise(quote).text.strip()
    if not text:
        raise InvalidRequest(
            f"{field_name}: the quote is empty after normalisation.", field=field_name
        )
    if len(text) > MAX_QUOTE_CHARS:
        raise InvalidRequest(
            f"{field_name}: at most {MAX_QUOTE_CHARS} characters after normalisation "
            f"(this one has {len(text)}).",
            field=field_name,
        )
    if mode == "passages":
        try:
            find_passages("", text)
        except ClaimHasNoWords:
            raise InvalidRequest(
                f"{field_name}: the claim has only common words or punctuation; "
                "add the words that carry its meaning.",
                field=field_name,
            ) from None
    return text


@dataclass
class Timings:
    """Where one call's time went, for the verification record."""

    started: float = field(default_factory=time.monotonic)
    fetch_ms: float | None = None
    extract_ms: float | None = None
    match_ms: float | None = None

    def total_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000


@dataclass(frozen=True)
class MatchOptions:
    mode: str = "fuzzy"
    case_sensitive: bool = False
    threshold: float = 0.9


# --- fetching ------------------------------------------------------------------


def fetch_checked(target: Target, *, field_name: str = "url") -> FetchResult:
    """Fetch an admitted page; every redirect hop is checked again, robots.txt included.

    A refusal met at a redirect (blocked, robots_disallowed) names in ``details.field``
    the request's field, as the same refusal does before payment.
    """
    try:
        return fetch(target, before_hop=hop_checks)
    except Blocked as exc:
        exc.details.setdefault("field", field_name)
        raise


# A fetch's result: a batch's fetcher answers None for a URL whose host does not resolve.
_Fetched = TypeVar("_Fetched", bound=FetchResult | None)


def fetch_all(
    fetchers: list[Callable[[], _Fetched]], *, meanwhile: Callable[[], None] | None = None
) -> list[_Fetched]:
    """Run the fetches at once, so a batch takes about as long as its slowest page.

    The threads only fetch (network and the cache-held robots.txt); nothing in them
    touches the database. ``meanwhile`` runs in the calling thread while they fetch
    (the Crossref lookups of the DOIs the cited links name). The first error raised
    by any fetch is raised here.

    Without Redis the calling thread also takes the turns of the threads' redirect hops
    (TurnDesk), before each hop is fetched; a hop met while ``meanwhile`` runs waits for
    it (the lookups end within their 15 s deadline, inside the fetch's 20 s).
    """
    if len(fetchers) == 1 and meanwhile is None:
        return [fetchers[0]()]
    desk = TurnDesk()  # the redirect hops the threads cannot count themselves
    with ThreadPoolExecutor(
        max_workers=len(fetchers),
        thread_name_prefix="fetch",
        initializer=mark_fetch_thread,
        initargs=(desk,),
    ) as pool:
        try:
            futures = [pool.submit(fetcher) for fetcher in fetchers]
            if meanwhile is not None:
                meanwhile()
            desk.serve(futures)
            return [future.result() for future in futures]
        finally:
            desk.close()


def fetch_and_look_up(
    fetchers: list[Callable[[], _Fetched]],
    urls: list[str],
    lookups: CallLookups,
    polite: list[Target] | None = None,
) -> list[_Fetched]:
    """Fetch the pages while the DOIs their cited links name are looked up at Crossref.

    ``polite``: the admitted pages, each taking a turn of its site's budget first (in this
    thread: 429 host_rate_limited for the whole call when one has none left).
    """
    take_host_turns(polite or [])
    early = [doi_named_by_link(url) for url in urls]
    if not lookups.enabled or not any(early):
        return fetch_all(fetchers)
    return fetch_all(fetchers, meanwhile=lambda: lookups.look_up(early))


def read_pages(fetched: list[FetchResult]) -> list[Page]:
    return build_pages(fetched, edge=settings.ATTEST_EDGE)


# --- matching --------------------------------------------------------------------


def _engine_mode(mode: str) -> TypeGuard[Mode]:
    return mode in ("fuzzy", "exact")


def _pdf_fields(page: Page, start: int, end: int) -> dict[str, int | None]:
    if page.pdf is None:
        return {}
    first, last = page.pdf_pages(start, end)
    return {"pdf_page": first, "pdf_page_end": last}


def match_on_page(
    page: Page, quote: str, *, options: MatchOptions, budget: WorkBudget
) -> dict[str, Any]:
    """The result block for one quote (or claim) on one page.

    Raises the engine's MatchTooCostly when a fuzzy search needs more than ``budget``
    has left; the caller decides whether that fails the call or only this quote.
    """
    text = page.text.text if page.text is not None else None
    result: dict[str, Any]
    found: PassagesResult | MatchResult
    if options.mode == "passages":
        found = find_passages(text or "", quote)
        result = {
            "match": found.match,
            "score": found.score,
            "start": found.start,
            "end": found.end,
            "context": found.context,
            "occurrences": found.occurrences,
            "passages": [
                {
                    "start": p.start,
                    "end": p.end,
                    "score": p.score,
                    "text": p.text,
                    "missing": list(p.missing),
                    "flags": list(p.flags),
                    **_pdf_fields(page, p.start, p.end),
                }
                for p in found.passages
            ],
            "scorer": found.scorer,
            "note": found.note,
        }
    elif text is None:
        result = {"match": "none", "score": None, "start": None, "end": None, "context": None}
        result["occurrences"] = 0
    else:
        assert _engine_mode(options.mode)  # the serializer allowed fuzzy, exact or passages
        found = match_quote(
            text,
            quote,
            mode=options.mode,
            case_sensitive=options.case_sensitive,
            threshold=options.threshold,
            budget=budget,
        )
        result = {
            "match": found.match,
            "score": found.score,
            "start": found.start,
            "end": found.end,
            "context": found.context,
            "occurrences": found.occurrences,
        }
    result["normalised_sha256"] = page.normalised_sha256
    if result["start"] is not None:
        result.update(_pdf_fields(page, result["start"], result["end"]))
    return result


def failed_result(error: MatchTooCostly) -> dict[str, Any]:
    """A batch member that could not be matched: its error, and every match field null."""
    return {
        "match": None,
        "score": None,
        "start": None,
        "end": None,
        "context": None,
        "occurrences": None,
        "error": {
            "code": error.code,
            "message": str(error),
            "details": {"needed": error.needed, "budget": error.budget, "reason": error.reason},
        },
    }


def too_costly(error: MatchTooCostly) -> MatchTooCostlyError:
    """The 422 for a single-quote call whose fuzzy search is over its budget."""
    return MatchTooCostlyError(details={"needed": error.needed, "budget": error.budget})


# --- receipts ----------------------------------------------------------------------


def page_claims(page: Page) -> PageClaims:
    return PageClaims(
        url=page.requested_url,
        final_url=page.final_url,
        http_status=page.http_status,
        content_kind=page.content_kind,
        content_sha256=page.content_sha256,
        normalised_sha256=page.normalised_sha256,
        evidence=page.evidence,
        doi=page.doi,
        doi_status=page.crossref.status if page.crossref is not None else None,
        retracted=page.crossref.retracted if page.crossref is not None else None,
    )


def result_claims(
    result: dict[str, Any], *, page_index: int, raw_quote: str, mode: str
) -> ResultClaims:
    """What the receipt signs of one result: never the quote, only its SHA-256."""
    passages = None
    if mode == "passages" and result.get("passages") is not None:
        passages = [
            PassageClaims(
                start=p["start"],
                end=p["end"],
                score=p["score"],
                pdf_page=p.get("pdf_page"),
                pdf_page_end=p.get("pdf_page_end"),
            )
            for p in result["passages"]
        ]
    return ResultClaims(
        page=page_index,
        quote_sha256=quote_sha256(raw_quote),
        mode=mode,
        match=result["match"],
        score=result["score"],
        start=result["start"],
        end=result["end"],
        pdf_page=result.get("pdf_page"),
        pdf_page_end=result.get("pdf_page_end"),
        scorer=result.get("scorer"),
        passages=passages,
    )
