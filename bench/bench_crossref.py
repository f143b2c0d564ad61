"""Crossref lookups for the 10 DOI pages of one batch, with a cold and a warm cache.

A local server speaks Crossref's wire format with a realistic delay (150 ms an
answer) and advertises the polite pool's limit (10 requests a second). Cold: every
DOI is asked (the work, then the notices naming it), one request at a time, paced.
Warm: every answer comes from the day-long cache in the database. SQLite by
default; set DATABASE_URL (and CACHE_URL=redis://…) to measure PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

DELAY_SECONDS = 0.15
DOIS_PER_BATCH = 10
COLD_RUNS = 3  # 30 lookups: well inside the paid budget of 120 a minute
WARM_RUNS = 50


def main() -> None:
    workdir = tempfile.mkdtemp(prefix="attest-bench-crossref-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["ATTEST_VAR_DIR"] = workdir
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # not a line per request
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import override_settings

    from tests.verification.crossref.server import CrossrefServer
    from verification.crossref import crossref_for_pages
    from verification.models import CrossrefAnswer, CrossrefLookup

    call_command("migrate", verbosity=0)
    cache.clear()
    server = CrossrefServer().start()
    server.generated_prefix = "10.5555/bench."
    server.delay = DELAY_SECONDS
    server.limit, server.interval = "10", "1s"
    cold, warm = [], []
    try:
        with override_settings(ATTEST_CROSSREF_URL=server.url):
            for run in range(COLD_RUNS):
                dois = [f"10.5555/bench.{run}.{i}" for i in range(DOIS_PER_BATCH)]
                started = time.perf_counter()
                outcomes = crossref_for_pages(dois, tier="paid")
                cold.append(time.perf_counter() - started)
                assert all(o.status == "found" for o in outcomes.values()), outcomes
            for _ in range(WARM_RUNS):
                started = time.perf_counter()
                outcomes = crossref_for_pages(dois, tier="paid")
                warm.append(time.perf_counter() - started)
                assert all(o.status == "found" for o in outcomes.values())
    finally:
        server.stop()
        CrossrefAnswer.objects.all().delete()
        CrossrefLookup.objects.all().delete()
        cache.clear()
    requests = len(server.seen)
    print(
        f"{DOIS_PER_BATCH} DOI pages, cold cache   median {statistics.median(cold):7.3f} s  "
        f"({COLD_RUNS} batches, {requests // COLD_RUNS} requests each, "
        f"{DELAY_SECONDS * 1000:.0f} ms an answer)"
    )
    print(
        f"{DOIS_PER_BATCH} DOI pages, warm cache   median {statistics.median(warm) * 1000:7.2f} ms "
        f"(p95 {sorted(warm)[int(WARM_RUNS * 0.95) - 1] * 1000:.2f} ms, {WARM_RUNS} batches)"
    )


if __name__ == "__main__":
    main()
