"""What the foundation registers for the docs pages: the request body limit."""

from __future__ import annotations

from django.conf import settings

from attest.registry import Limit, bytes_text, register_limits


def _requests() -> list[Limit]:
    return [
        Limit(
            "Request body",
            bytes_text(settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
            "413 request_too_large, not charged",
            "ATTEST_MAX_BODY_BYTES",
        )
    ]


register_limits("Requests", _requests)
