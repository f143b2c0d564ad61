"""PDF reading in a small pool of worker processes, so a heavy PDF never stalls a web worker."""

from __future__ import annotations

import multiprocessing
import resource
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from verification.engine.pdf_text import PdfText, PdfUnreadable, pdf_text

PDF_WORKERS = 2
PDF_SECONDS = 60
# A worker that needs more than this is reading a hostile file; the kernel stops it.
PDF_WORKER_MEMORY = 1536 * 1024 * 1024


class PdfTimeout(Exception):
    """Reading the PDF took longer than PDF_SECONDS."""


_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def _limit_memory() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = PDF_WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(PDF_WORKER_MEMORY, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _get_pool() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # spawn, not fork: the parent may hold threads and open sockets.
            _pool = ProcessPoolExecutor(
                max_workers=PDF_WORKERS,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_limit_memory,
            )
        return _pool


def _discard_pool(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


def read_pdf(data: bytes) -> PdfText:
    """Text of a PDF, read by a pool worker; PdfUnreadable or PdfTimeout when it cannot be."""
    pool = _get_pool()
    try:
        future = pool.submit(pdf_text, data)
        return future.result(timeout=PDF_SECONDS)
    except BrokenProcessPool:
        _discard_pool(pool)
        raise PdfUnreadable("The PDF reader stopped (the file needed too much memory).") from None
    except FutureTimeout:
        raise PdfTimeout() from None
    except MemoryError:
        raise PdfUnreadable("The PDF needed too much memory to read.") from None
