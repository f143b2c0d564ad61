"""Writing the verification record: one row per admitted call, one tally row for refusals."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from attest.errors import AttestError
from attest.prepared import created
from receipts.services import IssuedReceipt
from verification.models import RefusalTally, Verification
from verification.pipeline.pages import Page
from verification.pipeline.steps import Timings


def _outcome(error: AttestError | None) -> str:
    if error is None:
        return Verification.Outcome.ANSWERED
    if error.status_code >= 500 and error.code == "internal_error":
        return Verification.Outcome.FAILED
    return Verification.Outcome.REFUSED


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "")[:255]


def page_record(page: Page) -> dict[str, Any]:
    """A page as the record keeps it: its verdict and hashes, no text."""
    return {
        "url": page.requested_url,
        "final_url": page.final_url,
        "http_status": page.http_status,
        "content_kind": page.content_kind,
        "content_sha256": page.content_sha256,
        "normalised_sha256": page.normalised_sha256,
    }


def item_record(result: dict[str, Any], *, page_index: int) -> dict[str, Any]:
    """One quote's outcome as the record keeps it: where, what verdict, which error; no quote."""
    error = result.get("error")
    return {
        "page": page_index,
        "match": result.get("match"),
        "score": result.get("score"),
        "error": error["code"] if error else None,
    }


def _page_fields(page: Page | None) -> dict[str, Any]:
    """The record's columns about the call's page (blank when it never got one)."""
    if page is None:
        return {
            "final_url": "",
            "http_status": None,
            "content_kind": "",
            "content_sha256": "",
            "normalised_sha256": "",
            "pdf_pages_read": None,
        }
    return {
        "final_url": page.final_url or "",
        "http_status": page.http_status,
        "content_kind": page.content_kind,
        "content_sha256": page.content_sha256 or "",
        "normalised_sha256": page.normalised_sha256 or "",
        "pdf_pages_read": page.pdf.pages_read if page.pdf else None,
    }


def verification_record(
    *,
    route: str,
    request_id: str,
    tier: str,
    mode: str,
    url: str,
    timings: Timings,
    page: Page | None = None,
    result: dict | None = None,
    error: AttestError | None = None,
    pages: list[Page] | None = None,
    items: list[dict[str, Any]] | None = None,
    receipt_log_index: int | None = None,
) -> Verification:
    """Write the record of one admitted call; a batch also keeps every page and quote outcome."""
    items = items or []
    return created(
        Verification,
        route=route,
        request_id=request_id,
        tier=tier,
        outcome=_outcome(error),
        status_code=200 if error is None else error.status_code,
        error_code="" if error is None else error.code,
        mode=mode,
        match=((result or {}).get("match") or "") if error is None else "",
        host=host_of(url),
        requested_url=url,
        **_page_fields(page),
        fetch_ms=timings.fetch_ms,
        extract_ms=timings.extract_ms,
        match_ms=timings.match_ms,
        total_ms=timings.total_ms(),
        item_count=len(items) or 1,
        failed_count=sum(1 for item in items if item["error"]),
        items=items,
        pages=[page_record(p) for p in pages or ()],
        receipt_log_index=receipt_log_index,
    )


# Writes the call's record: how it ended, and for an answer its receipt's leaf index.
Record = Callable[[AttestError | None, int | None], None]


class Recording:
    """A call being recorded (see ``recorded``)."""

    def __init__(self, record: Record) -> None:
        self._record = record
        self.done = False

    def answered(self, issue: Callable[[], IssuedReceipt]) -> IssuedReceipt:
        """Issue the answer's receipt and record the call as answered, in one transaction.

        issue_receipt appends the receipt to the transparency log inside this transaction,
        so its leaf and the call's record commit together: the log adds its two statements
        to the call, not a commit of its own. Nothing is answered before that commit, and a
        failure before it rolls both back (the receipt was never sent; the call is then
        recorded as failed).
        """
        with transaction.atomic():
            issued = issue()
            self._record(None, issued.log_index)
        self.done = True
        return issued


@contextmanager
def recorded(record: Record) -> Iterator[Recording]:
    """Run a call's work and record how it ended: answered, refused, or failed (a 500).

    A call that signs an answer records it through ``Recording.answered``; one that ends
    otherwise is recorded here.
    """
    recording = Recording(record)
    try:
        yield recording
    except AttestError as exc:
        if not recording.done:
            record(exc, None)
        raise
    except Exception:
        # Kept for staff to find; the exception itself still becomes a logged 500.
        if not recording.done:
            record(AttestError(code="internal_error", status_code=500), None)
        raise
    if not recording.done:
        record(None, None)


def refusal_tally(*, route: str, error: AttestError, request_id: str, url: str = "") -> None:
    """Count a request refused before payment in its hour's tally row (one small row at most)."""
    now = timezone.now()
    hour = now.replace(minute=0, second=0, microsecond=0)
    key = {"hour": hour, "route": route, "error_code": error.code}
    last = {"last_at": now, "last_request_id": request_id, "last_host": host_of(url)}
    for _ in range(3):
        if RefusalTally.objects.filter(**key).update(count=F("count") + 1, **last):
            return
        try:
            with transaction.atomic():
                RefusalTally.objects.create(**key, count=1, **last)
            return
        except IntegrityError:
            continue  # another process created this hour's row first: count in it


class PaidAnswerRecord:
    """Billing's word on a paid answer corrects the record the view wrote (billing.recorders)."""

    def withheld(self, *, route: str, request_id: str, status_code: int, code: str) -> None:
        """The view answered, but settlement failed or is unconfirmed: the answer never left."""
        Verification.objects.filter(
            request_id=request_id, outcome=Verification.Outcome.ANSWERED
        ).update(
            outcome=Verification.Outcome.REFUSED, status_code=status_code, error_code=code[:64]
        )

    def delivered(self, *, route: str, request_id: str) -> None:
        """A retry reconciled the settlement and was given the stored answer after all."""
        Verification.objects.filter(
            request_id=request_id, outcome=Verification.Outcome.REFUSED
        ).update(outcome=Verification.Outcome.ANSWERED, status_code=200, error_code="")


PAID_ANSWERS = PaidAnswerRecord()
