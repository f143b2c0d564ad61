"""PDF reading in worker processes behind a bounded queue every server process shares.

A request's PDFs first take places in the shared PDF queue (``ATTEST_PDF_READERS``
places read at once across all processes, ``ATTEST_PDF_QUEUE`` more may wait), at
most one per PDF and at most ``ATTEST_PDF_READERS``, and each place reads the
request's PDFs in turn; when not one place is free the whole request answers 503
``over_capacity`` (``pdf_queue_full``, Retry-After) and is not charged. Once a
place's turn comes its PDF is read by a worker of this process's pebble pool, and only
that reading counts against ``PDF_SECONDS``: a read that outlives it is killed with
its worker (pebble starts a fresh one), never left running.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from django.conf import settings
from pebble import ProcessExpired, ProcessPool

from verification.capacity import limits
from verification.capacity.pdf_worker import limit_memory
from verification.capacity.queues import POLL_SECONDS, QueuePlace, SharedQueue
from verification.engine.pdf_text import PdfText, PdfUnreadable, pdf_text

PDF_WORKERS = 2
PDF_SECONDS = 60

PDF_QUEUE = SharedQueue(
    name="pdf",
    reason="pdf_queue_full",
    message="Too many PDFs are waiting to be read right now; retry after Retry-After seconds.",
    retry_after=5,
    # Waiting, then reading, then a margin: a place held longer belongs to a dead process.
    lease_seconds=3 * PDF_SECONDS,
    max_wait_seconds=PDF_SECONDS,
    sizes=lambda: limits.QueueLimits(settings.ATTEST_PDF_READERS, settings.ATTEST_PDF_QUEUE),
)


class PdfTimeout(Exception):
    """Reading the PDF took longer than PDF_SECONDS."""


_pool: ProcessPool | None = None
_lock = threading.Lock()


def _get_pool() -> ProcessPool:
    global _pool
    with _lock:
        if _pool is None or not _pool.active:
            # spawn, not fork: the parent may hold threads and open sockets.
            _pool = ProcessPool(
                max_workers=PDF_WORKERS,
                initializer=limit_memory,
                context=multiprocessing.get_context("spawn"),
            )
        return _pool


def _outcome(future: Future) -> PdfText | Exception:
    """The text, or the PdfUnreadable / PdfTimeout that stands for how the read ended."""
    try:
        return future.result()
    except PdfUnreadable as exc:
        return exc
    except FutureTimeout:
        return PdfTimeout()
    except (ProcessExpired, MemoryError):
        return PdfUnreadable("The PDF reader stopped (the file needed too much memory).")
    except BrokenProcessPool:
        return PdfUnreadable("The PDF reader stopped unexpectedly.")


def read_pdfs(blobs: list[bytes]) -> list[PdfText | Exception]:
    """Read several PDFs through the shared queue, each as soon as a place's turn comes.

    The request takes up to one place per PDF and never more than ``ATTEST_PDF_READERS``
    (more could not read at once anyway), as many as are free; each place reads the
    request's PDFs one after another. So a batch of any size fits an idle server, and
    ``OverCapacity`` (``pdf_queue_full``, with Retry-After) means other requests hold
    every place, or the first turn did not come within ``PDF_SECONDS``: both pass. Each
    entry of the answer is the text, or a ``PdfUnreadable`` / ``PdfTimeout`` for that file.
    """
    if not blobs:
        return []
    with PDF_QUEUE.join_some(min(len(blobs), PDF_QUEUE.sizes().running)) as place:
        return _read_in_turn(place, blobs)


def _read_in_turn(place: QueuePlace, blobs: list[bytes]) -> list[PdfText | Exception]:
    unread = deque(range(len(blobs)))
    reading: dict[Future, tuple[str, int]] = {}
    outcomes: list[PdfText | Exception | None] = [None] * len(blobs)
    pool = _get_pool()
    # Waiting for a turn is bounded apart from reading: the queue must move within this.
    give_up = time.monotonic() + PDF_QUEUE.max_wait_seconds
    try:
        while unread or reading:
            busy = {token for token, _ in reading.values()}
            free = [t for t in place.tokens if t not in busy and t not in place.left]
            if unread and free:
                if _start_reads(place, free, unread, blobs, reading, pool):
                    give_up = time.monotonic() + PDF_QUEUE.max_wait_seconds
                if unread and not reading and time.monotonic() > give_up:
                    raise PDF_QUEUE.full()
            elif free:
                place.leave(free)  # every PDF has its reader: the spare places go
            if not reading:
                time.sleep(POLL_SECONDS)
                continue
            _collect(reading, outcomes)
    except BaseException:
        for future in reading:
            future.cancel()  # pebble stops a running read with its worker
        raise
    return [outcome for outcome in outcomes if outcome is not None]


def _start_reads(
    place: QueuePlace,
    free: list[str],
    unread: deque[int],
    blobs: list[bytes],
    reading: dict[Future, tuple[str, int]],
    pool: ProcessPool,
) -> int:
    """Give each free place whose turn it is the next unread PDF; how many reads started."""
    turns = place.turns()
    started = 0
    for token in [t for t in free if t in turns][: len(unread)]:
        index = unread.popleft()
        place.renew([token])  # its lease runs from this read's start
        place.turn_came()
        future = pool.schedule(pdf_text, args=(blobs[index],), timeout=PDF_SECONDS)
        reading[future] = (token, index)
        started += 1
    return started


def _collect(
    reading: dict[Future, tuple[str, int]], outcomes: list[PdfText | Exception | None]
) -> None:
    """Wait a moment for a read to end and keep the outcome of each that did."""
    done, _ = wait(list(reading), timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
    for future in done:
        _token, index = reading.pop(future)
        outcomes[index] = _outcome(future)


def read_pdf(data: bytes) -> PdfText:
    """Text of one PDF; PdfUnreadable or PdfTimeout when it cannot be read."""
    outcome = read_pdfs([data])[0]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome
