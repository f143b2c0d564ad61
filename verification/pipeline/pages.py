"""Turn a fetched answer into a page: its verdict, the text a reader sees, DOI and flags."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from attest.errors import NotOnEdge
from attest.metrics import FETCH_SECONDS, FETCHES
from attest_core.normalise import Normalised, normalise
from verification.capacity.pdf_pool import PdfTimeout, read_pdfs
from verification.engine.classify import Verdict, advice_for, classify_html
from verification.engine.doi import find_doi
from verification.engine.html_text import (
    COUNTED_FROM_CHARS,
    decode_html,
    give_memory_back,
    html_text,
)
from verification.engine.injection import injection_flags
from verification.engine.pdf_text import PdfText
from verification.network.fetch import FetchResult

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
SNIFFED_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})

_OUTCOME_VERDICTS = {
    "timeout": Verdict("timeout", ["deadline_exceeded"]),
    "too_large": Verdict("too_large", ["body_over_limit"]),
    "connection_failed": Verdict("http_error", ["connection_failed"]),
    "too_many_redirects": Verdict("http_error", ["too_many_redirects"]),
    "bad_encoding": Verdict("unsupported", ["content_encoding"]),
}


@dataclass
class Page:
    """A fetched page as verification sees it."""

    requested_url: str
    final_url: str | None  # None when the host name did not resolve
    http_status: int | None
    content_kind: str
    signals: list[str]
    retrieved_at: datetime
    title: str | None = None
    content_sha256: str | None = None
    text: Normalised | None = None
    pdf: PdfText | None = None
    doi: str | None = None
    doi_source: str | None = None  # "url" or "page": where the DOI was found
    # The DOI's Crossref lookup (a verification.crossref.lookups.CrossrefOutcome), once made;
    # None without a DOI or with DOI lookups off.
    crossref: Any = None
    injection_flags: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    extract_ms: float = 0.0

    @property
    def advice(self) -> str:
        return advice_for(self.content_kind, self.signals)

    @property
    def normalised_sha256(self) -> str | None:
        return self.text.sha256 if self.text is not None else None

    def pdf_pages(self, start: int, end: int) -> tuple[int | None, int | None]:
        """1-based PDF pages where normalised text [start, end) begins and ends."""
        if self.pdf is None or self.text is None:
            return None, None
        first = self.pdf.page_at(self.text.to_source(start))
        last = self.pdf.page_at(self.text.to_source(max(start, end - 1)))
        return first, last

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "requested_url": self.requested_url,
            "final_url": self.final_url,
            "http_status": self.http_status,
            "content_kind": self.content_kind,
            "signals": self.signals,
            "title": self.title,
            "content_sha256": self.content_sha256,
            "retrieved_at": self.retrieved_at.isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"
            ),
            "doi": self.doi,
        }
        if self.pdf is not None:
            body["pdf"] = self.pdf.info()
        if self.crossref is not None:
            body["crossref"] = self.crossref.as_json(doi_source=self.doi_source)
        return body


def media_type(fetched: FetchResult) -> str:
    """The declared type, or for an undeclared or generic one, what the bytes start with."""
    declared = fetched.content_type
    if declared not in SNIFFED_TYPES:
        return declared
    start = fetched.body[:1024].lstrip().lower()
    if start.startswith(b"%pdf-"):
        return "application/pdf"
    if start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return "text/html"
    return declared or "application/octet-stream"


def _charset(fetched: FetchResult) -> str | None:
    for part in fetched.headers.get("content-type", "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def dead_page(url: str) -> Page:
    """The page of a URL whose host name does not resolve: a result, not an error, in a batch."""
    return Page(
        requested_url=url,
        final_url=None,
        http_status=None,
        content_kind="http_error",
        signals=["host_not_found"],
        retrieved_at=datetime.now(UTC),
        evidence={"outcome": "host_not_found"},
    )


def build_pages(fetched: list[FetchResult], *, edge: bool) -> list[Page]:
    """Pages of several fetched answers; their PDFs are queued and read together.

    Raises NotOnEdge for a PDF on an edge server, before anything is read, and
    OverCapacity (``pdf_queue_full``) when the PDFs cannot all be queued.
    """
    pages, pdfs = [], []
    for answer in fetched:
        page, is_pdf = _start_page(answer, edge=edge)
        pages.append(page)
        if is_pdf:
            pdfs.append((page, answer))
    started = time.monotonic()
    outcomes = read_pdfs([answer.body for _, answer in pdfs])
    reading_ms = (time.monotonic() - started) * 1000
    for (page, answer), outcome in zip(pdfs, outcomes, strict=True):
        _finish_pdf_page(page, answer, outcome)
        page.extract_ms += reading_ms
    for page, answer in zip(pages, fetched, strict=True):
        FETCHES.labels(page.content_kind).inc()
        FETCH_SECONDS.labels(page.content_kind).observe(answer.elapsed_ms / 1000)
    return pages


def _start_page(fetched: FetchResult, *, edge: bool) -> tuple[Page, bool]:
    """The page with its verdict and, unless it is a PDF (the bool), its text."""
    started = time.monotonic()
    page = Page(
        requested_url=fetched.requested_url,
        final_url=fetched.final_url,
        http_status=fetched.http_status,
        content_kind="real",
        signals=[],
        retrieved_at=fetched.retrieved_at,
        evidence=fetched.evidence(),
    )
    # The cited link alone may name the DOI (a doi.org link, a DOI in the path), whatever
    # became of the fetch; the page's meta tags are read with its text below.
    _set_doi(page, fetched)
    verdict = _OUTCOME_VERDICTS.get(fetched.outcome)
    if verdict is not None:
        if fetched.http_status is not None and fetched.outcome != "timeout":
            verdict = Verdict(
                verdict.content_kind, [f"status_{fetched.http_status}", *verdict.signals]
            )
        page.content_kind, page.signals = verdict.content_kind, list(verdict.signals)
        return page, False

    page.content_sha256 = hashlib.sha256(fetched.body).hexdigest()
    status = fetched.http_status or 0
    kind = media_type(fetched)
    is_pdf = kind in PDF_TYPES and status < 400
    if is_pdf:
        if edge:
            raise NotOnEdge(
                "This edge server does not read PDFs; send the request to the full service.",
                details={"reason": "pdf", "url": fetched.final_url},
            )
    elif kind in HTML_TYPES or kind in TEXT_TYPES or status >= 400:
        _read_markup_page(page, fetched, as_html=kind not in TEXT_TYPES)
    else:
        page.content_kind, page.signals = "unsupported", [f"status_{status}", "content_type"]
        page.evidence["content_type"] = kind
    page.extract_ms = (time.monotonic() - started) * 1000
    return page, is_pdf


def _set_doi(page: Page, fetched: FetchResult, meta: dict[str, list[str]] | None = None) -> None:
    found = find_doi(
        requested_url=fetched.requested_url,
        redirects=[hop.url for hop in fetched.redirects],
        final_url=fetched.final_url,
        meta=meta,
    )
    page.doi, page.doi_source = (found.doi, found.source) if found else (None, None)


def _read_markup_page(page: Page, fetched: FetchResult, *, as_html: bool) -> None:
    markup = decode_html(fetched.body, _charset(fetched))
    # What the verdict reads of the markup; the rest is not kept past reading its text
    # (on a 14 MB page it would be 14 MB more while the text is normalised).
    body_start = markup[:32768]
    if as_html:
        read = html_text(markup)
        if len(markup) >= COUNTED_FROM_CHARS:
            _read_large_page.done = True
        del markup
        if read.too_many_nodes:
            # Reading it would take the worker's memory; it is not checked.
            status = fetched.http_status or 0
            page.content_kind, page.signals = "too_large", [f"status_{status}", "too_many_elements"]
            return
        if read.truncated:
            # The parser stopped at its nesting limit; what follows was never read, so
            # the page is not checked rather than reported real on part of its text.
            status = fetched.http_status or 0
            page.content_kind, page.signals = "too_large", [f"status_{status}", "nesting_too_deep"]
            page.title = read.title or None
            return
        source, hidden, title = read.text, read.hidden_text, read.title or None
        scripts, mount, noscript, meta = (
            read.scripts,
            read.mount_node,
            read.noscript_text,
            read.meta,
        )
    else:
        source, hidden, title = markup, "", None
        scripts, mount, noscript, meta = 0, False, "", {}
    page.text = normalise(source)
    page.title = title
    verdict = classify_html(
        status=fetched.http_status or 0,
        headers=fetched.headers,
        body_start=body_start,
        visible_chars=len(page.text.text.strip()),
        scripts=scripts,
        mount_node=mount,
        noscript_text=noscript,
    )
    page.content_kind, page.signals = verdict.content_kind, verdict.signals
    page.injection_flags = injection_flags(source, hidden)
    _set_doi(page, fetched, meta=meta)


# Whether this thread's request read a page large enough that its memory is worth
# handing back when the request ends (trim_after_large_pages).
_read_large_page = threading.local()


def trim_after_large_pages(**_signal: object) -> None:
    """At the end of a request that read a large page: give the freed heap back.

    The page's tree, its text and every copy of it are gone by then; glibc keeps freed
    heap memory for the process unless asked (malloc_trim), so a worker would otherwise
    stay at the peak of the largest page it ever read."""
    if getattr(_read_large_page, "done", False):
        _read_large_page.done = False
        give_memory_back()


def _finish_pdf_page(page: Page, fetched: FetchResult, read: PdfText | Exception) -> None:
    status = fetched.http_status or 0
    if isinstance(read, PdfTimeout):
        page.content_kind, page.signals = "timeout", [f"status_{status}", "pdf_read_timeout"]
        return
    if isinstance(read, Exception):
        page.content_kind, page.signals = "unsupported", [f"status_{status}", "pdf_unreadable"]
        return
    page.pdf = read
    if len(read.text) >= COUNTED_FROM_CHARS:
        _read_large_page.done = True
    page.text = normalise(read.text)
    page.injection_flags = injection_flags(read.text)
    signals = [f"status_{status}", "pdf"]
    if read.truncated:
        signals.append("pdf_truncated")
    if read.skipped_pages:
        signals.append("pdf_pages_skipped")
    if not page.text.text.strip():
        page.content_kind, page.signals = "empty", [*signals, "no_text_layer"]
    else:
        page.content_kind, page.signals = "real", signals
