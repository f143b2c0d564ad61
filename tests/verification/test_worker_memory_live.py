"""Dense HTML cannot take a worker's memory, and what a page used goes back: real gunicorn.

gunicorn runs as ``make run`` starts it (sync workers, ``--preload``, the Makefile's
``--max-requests`` and jitter); each hostile page under the 15 MiB byte cap is sent to
every worker at once, and each worker's peak RSS (``VmHWM``, reset before the page) and
its RSS after are read from /proc. Before the node budget a 12 MB page of 1.5 M elements
took a worker to 618 MB and left it there.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bench.bench_memory import (
    hostile_pages,
    makefile_flags,
    measure,
    rss_mb,
    serving_workers,
    worker_pids,
)
from tests.live_service import migrate, server_env, shared_database
from tests.verification.conftest import PageServer, page

pytestmark = [pytest.mark.django_db(transaction=True)]

PEAK_MB = 300
# "Back near its idle size": what a worker may keep after a page, over its RSS after a
# small page (Python's own free lists, libxml2's dictionaries).
SETTLED_MB = 40
WORKERS = 3
WARM = b"<html><body><p>" + b"A small page of plain words. " * 20 + b"</p></body></html>"


@pytest.fixture
def env(pages: PageServer, signing_keys: str, tmp_path) -> dict[str, str]:
    database_url, needs_migrate = shared_database(tmp_path)
    env = server_env(
        DATABASE_URL=database_url,
        SECRET_KEY="worker-memory-test",
        ATTEST_VAR_DIR=str(tmp_path),
        ATTEST_SIGNING_KEYS=signing_keys,
        ATTEST_FETCH_ALLOW=f"127.0.0.1:{pages.port}",
        ATTEST_TRIAL_CALLS_PER_DAY="1000000",
        ATTEST_UNPAID_RATE="100000/m",
        # One address warms every worker at once; the default bound is held elsewhere.
        ATTEST_UNPAID_IN_FLIGHT="100",
    )
    if needs_migrate:
        migrate(env)
    return env


def _warm(base: str, url: str) -> None:
    """One small page per worker: each has imported what a request needs."""

    def one(_: int) -> int:
        answer = httpx.post(
            f"{base}/v1/verify/quote",
            json={"url": url, "quote": "plain words"},
            timeout=120,
            trust_env=False,
        )
        return answer.status_code

    for _ in range(2):
        with ThreadPoolExecutor(WORKERS) as pool:
            assert set(pool.map(one, range(WORKERS))) == {200}


def test_the_makefile_recycles_workers_with_jitter():
    flags = makefile_flags()
    assert "--max-requests" in flags and "--max-requests-jitter" in flags
    assert int(flags[flags.index("--max-requests") + 1]) > 0
    assert int(flags[flags.index("--max-requests-jitter") + 1]) > 0


def test_hostile_pages_keep_every_worker_under_300_mb_and_it_gives_the_memory_back(env, pages):
    hostile = hostile_pages()
    for path, body in hostile.items():
        assert len(body) < 15 * 1024 * 1024  # every one under the byte cap: it is read
        pages.routes[path] = page(body)
    pages.routes["/warm"] = page(WARM)
    expected = {
        "/dense": "too_large",
        "/at-cap": "too_large",
        "/unclosed": "too_large",
        "/attributes": "too_large",
        "/under-budget": "real",
        "/text": "real",
    }
    with serving_workers(env) as (base, master):
        assert len(worker_pids(master)) == WORKERS
        _warm(base, pages.url("/warm"))
        time.sleep(0.5)
        idle = {pid: rss_mb(pid) for pid in worker_pids(master)}
        for path in hostile:
            found = measure(base, master, pages.url(path))
            assert not found["replaced"], (path, found)  # no worker died or was recycled
            worst = max(found["peak"].values())
            assert worst < PEAK_MB, f"{path}: a worker peaked at {worst:.0f} MB"
            for pid, after in found["after"].items():
                assert after <= idle[pid] + SETTLED_MB, (
                    f"{path}: a worker kept {after:.0f} MB (idle {idle[pid]:.0f} MB)"
                )
            assert found["statuses"] == [200], (path, found)
            assert found["kinds"] == [expected[path]], (path, found)
            if expected[path] == "too_large":
                assert "too_many_elements" in found["signals"], (path, found)
