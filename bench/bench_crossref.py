"""Crossref lookups for the 10 DOI pages of one batch, with a cold and a warm cache.

A local server speaks Crossref's wire format with a realistic delay (150 ms an
answer) and advertises the polite pool's limit (10 requests a second). Cold: every
DOI is asked (the work, then the notices naming it), one request at a time, paced.
Warm: every answer comes from the day-long cache in the database.

Two measures: the lookups alone (``crossref_for_pages``, in process; SQLite by
default, set DATABASE_URL and CACHE_URL=redis://… for PostgreSQL and Redis), and
whole ``verify/citations`` batches through the API (gunicorn, paid for real
through the local facilitator) on 10 local pages whose meta tags name 10 DOIs,
next to the same batch on pages without a DOI.
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
API_WARM_RUNS = 20


def _pages(count_runs: int) -> dict[str, bytes]:
    """Pages /r{run}/{i} naming DOI 10.5555/bench.api.{run}.{i}, and /plain/{i} naming none."""
    words = "The survey found that nitrate levels in the estuary fell over the season."

    def html(doi: str | None) -> bytes:
        meta = f'<meta name="citation_doi" content="{doi}">' if doi else ""
        body = f"<html><head><title>Paper</title>{meta}</head><body><p>{words}</p></body></html>"
        return body.encode()

    pages = {f"/plain/{i}": html(None) for i in range(DOIS_PER_BATCH)}
    for run in range(count_runs):
        for i in range(DOIS_PER_BATCH):
            pages[f"/r{run}/{i}"] = html(f"10.5555/bench.api.{run}.{i}")
    return pages


def bench_api() -> None:
    """verify/citations batches of 10 DOI pages through gunicorn: cold, warm, no DOI."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.verification.crossref.lookups.server import CrossrefServer

    from bench.bench_batches import _PaidClient, _serve
    from tests.live_service import gunicorn, server_env

    root = Path(__file__).resolve().parent.parent
    crossref = CrossrefServer().start()
    crossref.generated_prefix = "10.5555/bench."
    crossref.delay = DELAY_SECONDS
    crossref.limit, crossref.interval = "10", "1s"
    pages = _serve(_pages(COLD_RUNS))
    site = f"http://127.0.0.1:{pages.server_address[1]}"

    def batch(prefix: str) -> dict:
        return {
            "citations": [
                {"url": f"{site}{prefix}/{i}", "quote": "nitrate levels in the estuary fell"}
                for i in range(DOIS_PER_BATCH)
            ]
        }

    cold, warm, plain = [], [], []
    with tempfile.TemporaryDirectory() as var:
        env = server_env(
            ATTEST_VAR_DIR=var,
            DATABASE_URL=f"sqlite:///{var}/bench.sqlite3",
            ATTEST_SIGNING_KEYS=f"{var}/keys",
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{pages.server_address[1]}",
            ATTEST_TRIAL_CALLS_PER_DAY="0",
            ATTEST_CROSSREF_URL=crossref.url,
        )
        for command in (["migrate", "--noinput"], ["ensure_signing_key"]):
            subprocess.run(
                [sys.executable, "manage.py", *command],
                cwd=root,
                env=env,
                check=True,
                capture_output=True,
            )
        try:
            with gunicorn(env, workers=1, threads=4) as base:
                client = _PaidClient(base)
                client.post("verify/citations", batch("/plain"))  # warm the server up
                for _ in range(API_WARM_RUNS):
                    started = time.perf_counter()
                    client.post("verify/citations", batch("/plain"))
                    plain.append(time.perf_counter() - started)
                for run in range(COLD_RUNS):
                    started = time.perf_counter()
                    answer = client.post("verify/citations", batch(f"/r{run}")).json()
                    cold.append(time.perf_counter() - started)
                    statuses = {p["crossref"]["status"] for p in answer["pages"]}
                    assert statuses == {"found"}, answer["pages"][0]["crossref"]
                    assert answer["summary"]["doi_unchecked"] == 0, answer["summary"]
                asked = len(crossref.seen)
                for _ in range(API_WARM_RUNS):
                    started = time.perf_counter()
                    client.post("verify/citations", batch(f"/r{COLD_RUNS - 1}"))
                    warm.append(time.perf_counter() - started)
                assert len(crossref.seen) == asked, "a warm batch asked Crossref"
        finally:
            crossref.stop()
            pages.shutdown()
    ms = 1000
    print(
        f"verify/citations, {DOIS_PER_BATCH} DOI pages, cold cache  median "
        f"{statistics.median(cold):7.3f} s  ({COLD_RUNS} paid batches through gunicorn)"
    )
    print(
        f"verify/citations, {DOIS_PER_BATCH} DOI pages, warm cache  median "
        f"{statistics.median(warm) * ms:7.1f} ms (max {max(warm) * ms:.1f} ms, "
        f"{API_WARM_RUNS} batches)"
    )
    print(
        f"verify/citations, {DOIS_PER_BATCH} pages without a DOI   median "
        f"{statistics.median(plain) * ms:7.1f} ms (max {max(plain) * ms:.1f} ms, "
        f"{API_WARM_RUNS} batches)"
    )


def main() -> None:
    bench_lookups()
    bench_api()


def bench_lookups() -> None:
    """crossref_for_pages alone, in process, for 10 DOIs: cold, then warm."""
    workdir = tempfile.mkdtemp(prefix="attest-bench-crossref-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ["ATTEST_VAR_DIR"] = workdir
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # not a line per request
    from bench.setup import one_host_secret_key

    one_host_secret_key()
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import override_settings
    from tests.verification.crossref.lookups.server import CrossrefServer

    from verification.crossref.lookups import crossref_for_pages
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
