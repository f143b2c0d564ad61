"""Worker memory on hostile HTML: peak and settled RSS of real gunicorn workers.

Starts gunicorn as ``make run`` does (3 sync workers, ``--preload``, the Makefile's
``--max-requests`` and jitter) on a scratch SQLite database, serves hostile pages
from a local page server, and sends each page to ``verify/quote`` (trial calls) from
3 clients at once, so every worker reads one. Reports, per page, each worker's RSS
before, its peak (``VmHWM``, reset before each page) and its RSS a moment after the
calls end. ``python -m bench memory`` (``python -m bench.bench_memory /text`` for one page).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
WORKERS = 3


def hostile_pages() -> dict[str, bytes]:
    """Pages under the 15 MiB byte cap that cost a parser the most memory per byte."""
    dense = b"<html><body>" + b"<b>x</b>" * 1_500_000 + b"</body></html>"  # 12 MB
    at_cap = b"<html><body>" + b"<i>y</i>" * 1_900_000 + b"</body></html>"  # 15.2 MB
    unclosed = b"<html><body>" + b"<p>z" * 3_700_000 + b"</body></html>"  # 14.8 MB
    attributes = b"<b a b c d e f g h i j k l m n o p q r s t u v w x>x</b>"
    attributed = b"<html><body>" + attributes * 250_000 + b"</body></html>"  # 13.4 MB
    # The densest page still parsed: just under the node budget (html_text.MAX_HTML_NODES).
    under_budget = b"<html><body>" + b"<b>x</b>" * 249_000 + b"</body></html>"  # 1.9 MB
    words = b"plain words of a long report " * 500_000
    text = b"<html><body><p>" + words + b"</p></body></html>"  # 14.5 MB
    return {
        "/dense": dense,
        "/at-cap": at_cap,
        "/unclosed": unclosed,
        "/attributes": attributed,
        "/under-budget": under_budget,
        "/text": text,
    }


def worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def rss_mb(pid: int) -> float:
    return status_kb(pid, "VmRSS") / 1024


def peak_mb(pid: int) -> float:
    return status_kb(pid, "VmHWM") / 1024


def reset_peak(pid: int) -> None:
    """Start the process's peak RSS (VmHWM) again from its RSS now (Linux clear_refs 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def makefile_flags() -> list[str]:
    """The gunicorn flags of ``make run`` that bear on memory, read from the Makefile."""
    import re
    import shlex

    text = (ROOT / "Makefile").read_text()
    found = re.search(r"^GUNICORN_RECYCLE\s*:?=\s*(.*)$", text, re.M)
    return shlex.split(found.group(1)) if found else []


def measure(base: str, master: int, url: str, *, calls: int = WORKERS) -> dict:
    """Send ``calls`` trial verify/quote calls for ``url`` at once; the workers' figures."""
    pids = worker_pids(master)
    before = {pid: rss_mb(pid) for pid in pids}
    for pid in pids:
        reset_peak(pid)

    def one(_: int) -> httpx.Response:
        return httpx.post(
            f"{base}/v1/verify/quote",
            json={"url": url, "quote": "a quote that is not there"},
            timeout=300,
            trust_env=False,
        )

    started = time.monotonic()
    with ThreadPoolExecutor(calls) as pool:
        answers = list(pool.map(one, range(calls)))
    elapsed = time.monotonic() - started
    time.sleep(1.0)
    now = worker_pids(master)
    return {
        "statuses": sorted({a.status_code for a in answers}),
        "kinds": sorted(
            {
                (a.json().get("page") or {}).get(
                    "content_kind", a.json().get("error", {}).get("code")
                )
                for a in answers
            }
        ),
        "signals": sorted(
            {s for a in answers for s in (a.json().get("page") or {}).get("signals", [])}
        ),
        "seconds": elapsed,
        "before": before,
        "peak": {pid: peak_mb(pid) for pid in now if pid in before},
        "after": {pid: rss_mb(pid) for pid in now},
        "replaced": sorted(set(now) - set(before)),
    }


def serve(pages: dict[str, bytes]):
    sys.path.insert(0, str(ROOT))
    from tests.verification.conftest import PageServer
    from tests.verification.conftest import page as page_handler

    server = PageServer().start()
    for path, body in pages.items():
        server.routes[path] = page_handler(body)
    return server


@contextmanager
def serving_workers(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """gunicorn as ``make run`` starts it, on a free port: its base URL and master pid."""
    from tests.live_service import free_port, gunicorn_command, start, stop, wait_answering

    port = free_port()
    command = gunicorn_command(
        port, workers=WORKERS, threads=1, extra=["--preload", *makefile_flags()]
    )
    with tempfile.TemporaryDirectory() as logs:
        log = Path(logs) / "gunicorn.log"
        process = start(command, env=env, log=log)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_answering(base, process, log, 90)
            time.sleep(2)  # every worker up
            yield base, process.pid
        finally:
            stop(process)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.live_service import server_env

    pages = hostile_pages()
    wanted = [arg for arg in sys.argv[1:] if arg.startswith("/")]
    if wanted:  # python -m bench.bench_memory /text /dense: only those pages
        pages = {path: pages[path] for path in wanted}
    server = serve(pages)
    with tempfile.TemporaryDirectory() as var:
        env = server_env(
            ATTEST_VAR_DIR=var,
            DATABASE_URL=f"sqlite:///{var}/bench.sqlite3",
            ATTEST_SIGNING_KEYS=f"{var}/keys",
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{server.port}",
            ATTEST_TRIAL_CALLS_PER_DAY="1000000",
            # The three calls come from one address: each worker reads the page (the
            # default of 2 unpaid checks at once would answer the third with a 429).
            ATTEST_UNPAID_IN_FLIGHT="100",
        )
        for command in (["migrate", "--noinput"], ["ensure_signing_key"]):
            subprocess.run(
                [sys.executable, "manage.py", *command],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        for path, body in pages.items():
            with serving_workers(env) as (base, master):
                idle = {pid: rss_mb(pid) for pid in worker_pids(master)}
                found = measure(base, master, server.url(path))
                print(
                    f"{path} ({len(body) / MB:.1f} MiB): {found['statuses']} {found['kinds']} "
                    f"{found['signals']} in {found['seconds']:.1f} s; idle MB "
                    f"{', '.join(f'{v:.0f}' for v in idle.values())}; "
                    f"peak MB {max(found['peak'].values(), default=0):.0f}; "
                    f"after MB {', '.join(f'{v:.0f}' for v in found['after'].values())}"
                    + (f" (replaced {len(found['replaced'])})" if found["replaced"] else ""),
                    flush=True,
                )
    server.server.shutdown()


if __name__ == "__main__":
    main()
