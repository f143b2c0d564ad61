"""GET /readyz: may a load balancer send this instance traffic? (/healthz: is it alive?)"""

from __future__ import annotations

import functools
import uuid

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from attest.errors import OUTAGE_RETRY_AFTER
from receipts.selectors import signing_keyring

# A cache backend kept inside the process answers as long as the process does: no check.
_IN_PROCESS_CACHES = ("django.core.cache.backends.locmem.LocMemCache",)


@functools.cache
def _known_migrations() -> frozenset[tuple[str, str]]:
    """Every migration this code ships (read from disk once: it cannot change under us)."""
    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)


def _database() -> str | None:
    applied = set(MigrationRecorder(connection).applied_migrations())
    missing = sorted(_known_migrations() - applied)
    if missing:
        app, name = missing[0]
        return f"{len(missing)} migrations not applied (first: {app}.{name})"
    return None


def _cache() -> str | None:
    if settings.CACHES["default"]["BACKEND"] in _IN_PROCESS_CACHES:
        return None
    probe = uuid.uuid4().hex
    cache.set(f"readyz:{probe}", probe, timeout=5)
    if cache.get(f"readyz:{probe}") != probe:
        return "the cache did not give back what was just stored"
    return None


def _signing_key() -> str | None:
    signing_keyring().signing_key()
    return None


_CHECKS = (("database", _database), ("cache", _cache), ("signing_key", _signing_key))


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Run every check (each failure named, not only the first); an operator's probe, not
    part of the API's schema."""
    failed: dict[str, str] = {}
    for name, check in _CHECKS:
        try:
            problem = check()
        except Exception as exc:  # any failure of a dependency means not ready
            problem = f"{type(exc).__name__}: {exc}"[:300]
        if problem is not None:
            failed[name] = problem
    if failed:
        response = JsonResponse({"status": "not_ready", "failed": failed}, status=503)
        response["Retry-After"] = str(OUTAGE_RETRY_AFTER)
        return response
    return JsonResponse({"status": "ok"})
