"""What runs inside a PDF worker process: kept free of Django, which a spawned worker lacks."""

from __future__ import annotations

import resource

# A worker that needs more than this is reading a hostile file; the kernel stops it.
PDF_WORKER_MEMORY = 1536 * 1024 * 1024


def limit_memory() -> None:
    """The worker's initializer: cap its address space at PDF_WORKER_MEMORY."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = PDF_WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(PDF_WORKER_MEMORY, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
