"""/metrics through a real `make run` (the Makefile's own recipe: migrate, a signing key, the
task worker and gunicorn with its default three workers, --preload, the metrics directory and
attest.gunicorn_hooks): one view across the workers, and the counters move with the work:
requests, a trial and a paid verify call, payments, fetches, the ledger and the transparency
log. Ctrl-C (SIGINT to the recipe's process group) stops all of it, the task worker too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from x402.http import decode_payment_required_header

from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.billing.facilitator_server import FacilitatorServer
from tests.billing.gunicorn_server import _suite_shared
from tests.live_service import (
    ROOT,
    STARTUP_SECONDS,
    free_port,
    server_env,
    shared_database,
    start,
    wait_answering,
)

# `make run` migrates a new SQLite database before it answers: slower than the suite's
# default limit when the machine is busy.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

TOKEN = "scrape-" + "x" * 24
QUOTE = "64 percent of beach samples met the bathing standard"
# An enclosing make's own variables (`make test` runs this suite) would reach the inner one
# as its flags, jobserver and level.
MAKE_VARIABLES = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
# `make run` installs .venv when its dependency lists changed: the suite must find it current,
# so the test never downloads anything.
INSTALLED = ".venv/.installed"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition, keyed by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when none)."""
    wanted = set(labels.items())
    return sum(v for (n, got), v in scraped.items() if n == name and wanted <= got)


def session_processes(session: int) -> list[int]:
    """The live processes of a session (a recipe started in its own: make, its shell, the
    task worker, gunicorn's master and workers)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended while we looked
        state, sid = fields[0], int(fields[3])
        if sid == session and state != "Z":
            found.append(int(stat.parent.name))
    return found


def interrupt(recipe: subprocess.Popen, timeout: float = 60) -> None:
    """Ctrl-C as a terminal gives it: SIGINT to the whole process group. Every process the
    recipe started must be gone by ``timeout``; whatever is left is killed and named."""
    if recipe.poll() is not None and not session_processes(recipe.pid):
        return  # stopped already
    os.killpg(recipe.pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    with suppress(subprocess.TimeoutExpired):
        recipe.wait(timeout=timeout)
    left = session_processes(recipe.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = session_processes(recipe.pid)
    if left or recipe.poll() is None:
        names = command_lines(left)
        os.killpg(recipe.pid, signal.SIGKILL)
        recipe.wait(timeout=10)
        pytest.fail(f"Ctrl-C left `make run` or its processes running: {names}")


def make_run(port: int, metrics_dir: Path) -> list[str]:
    return [
        "make",
        "--no-print-directory",
        "-C",
        str(ROOT),
        "run",
        f"PORT={port}",
        "HOST=127.0.0.1",
        f"METRICS_DIR={metrics_dir}",
    ]


@contextmanager
def make_run_service(tmp_path: Path, django_db_blocker) -> Iterator[tuple]:
    """`make run` on a free port with a database, var directory and metrics directory of its
    own; yields its base URL, a project's credential, the metrics directory and the recipe
    (make's process, the leader of its session). Stopped by Ctrl-C after."""
    bare = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    up_to_date = subprocess.run(["make", "-q", "-C", str(ROOT), INSTALLED], env=bare, check=False)
    if up_to_date.returncode != 0:
        pytest.fail(f"{INSTALLED} is out of date: run `make install` first (make test does)")
    metrics_dir = tmp_path / "prometheus"
    metrics_dir.mkdir()
    # What an earlier run left: the hooks must empty the directory as gunicorn starts.
    (metrics_dir / "counter_99999.db").write_bytes(b"\0" * 16)
    port = free_port()
    db_url, _ = shared_database(tmp_path)
    # On SQLite `make run` makes and migrates its own database under the var directory, as
    # on a fresh machine; on PostgreSQL it shares the suite's (migrated already).
    database = {"DATABASE_URL": db_url} if db_url.startswith("postgres") else {}
    with FacilitatorServer(NETWORK) as facilitator:
        env = server_env(
            **_suite_shared(),  # on PostgreSQL every host shares the secret key
            **database,
            ATTEST_VAR_DIR=str(tmp_path),  # the database, the signing key `make run` makes
            ATTEST_PUBLIC_URL=f"http://127.0.0.1:{port}",
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
            ATTEST_METRICS_TOKEN=TOKEN,
            ATTEST_TRIAL_CALLS_PER_DAY="1",
            X402_FACILITATOR_URL=facilitator.url,
            X402_NETWORK=NETWORK,
            X402_PAY_TO=PAY_TO,
        )
        for name in MAKE_VARIABLES:
            env.pop(name, None)
        log = tmp_path / "make-run.log"
        recipe = start(make_run(port, metrics_dir), env=env, log=log)
        base = f"http://127.0.0.1:{port}"
        try:
            with django_db_blocker.unblock():
                wait_answering(base, recipe, log, STARTUP_SECONDS * 2)  # migrate first
                token = subprocess.run(
                    [sys.executable, "manage.py", "create_project", "metrics"],
                    cwd=ROOT,
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=300,
                ).stdout.split()[-1]
            yield base, token, metrics_dir, recipe
        finally:
            interrupt(recipe)


@pytest.fixture(scope="module")
def service(django_db_setup, django_db_blocker, tmp_path_factory):
    """One `make run` for the tests that only read it."""
    with make_run_service(tmp_path_factory.mktemp("make-run"), django_db_blocker) as running:
        yield running


@pytest.fixture
def stoppable_service(tmp_path, django_db_blocker):
    """A `make run` of the test's own, which the test stops."""
    with make_run_service(tmp_path, django_db_blocker) as running:
        yield running


def scrape(base: str) -> dict:
    response = httpx.get(f"{base}/metrics", timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


def test_counters_of_every_worker_add_up_and_move_with_the_work(service):
    base, token, metrics_dir, _recipe = service
    assert not (metrics_dir / "counter_99999.db").exists()
    before = scrape(base)

    # 30 health checks, 6 at a time: the three workers each answer some.
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: httpx.get(f"{base}/healthz", timeout=30), range(30)))
    assert {a.status_code for a in answers} == {200}
    workers = {p.name.rsplit("_", 1)[1] for p in metrics_dir.glob("counter_*.db")}
    assert len(workers) >= 2, workers

    page = f"{base}/v1/sample/page"
    trial = httpx.post(f"{base}/v1/verify/quote", json={"url": page, "quote": QUOTE}, timeout=60)
    assert trial.status_code == 200, trial.text
    offer = httpx.post(f"{base}/v1/verify/quote", json={"url": page, "quote": QUOTE}, timeout=60)
    assert offer.status_code == 402
    payment = Payer().pay(decode_payment_required_header(offer.headers["PAYMENT-REQUIRED"]))
    paid = httpx.post(
        f"{base}/v1/verify/quote",
        json={"url": page, "quote": QUOTE},
        headers={"PAYMENT-SIGNATURE": payment},
        timeout=60,
    )
    assert paid.status_code == 200, paid.text

    auth = {"Authorization": f"Bearer {token}"}
    ingest = httpx.post(
        f"{base}/v1/observations",
        headers=auth,
        json={
            "subject": "user-1",
            "messages": [
                {
                    "id": "m1",
                    "role": "user",
                    "text": "I moved to Dublin in March.",
                    "occurred_at": "2026-03-04T10:11:58Z",
                }
            ],
        },
        timeout=60,
    )
    assert ingest.status_code in (200, 201), ingest.text
    facts = ingest.json()["facts"]
    assert httpx.post(
        f"{base}/v1/citations/resolve", headers=auth, json={"id": facts[0]["id"]}, timeout=60
    ).is_success
    assert httpx.post(
        f"{base}/v1/recall", headers=auth, json={"subject": "user-1"}, timeout=60
    ).is_success

    after = scrape(base)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    route = {"route": "healthz", "method": "GET", "status": "200"}
    assert moved("attest_http_requests_total", **route) == 30
    assert moved("attest_http_request_duration_seconds_count", route="healthz") == 30
    assert moved("attest_http_requests_total", route="verify-quote", status="402") == 1
    assert moved("attest_http_requests_total", route="verify-quote", status="200") == 2
    # The raw path never becomes a label.
    assert not any(("route", "/healthz") in labels for _, labels in after)
    charged = {"route": "verify/quote", "result": "charged"}
    assert moved("attest_priced_calls_total", **charged, tier="trial", rail="none") == 1
    assert moved("attest_priced_calls_total", **charged, tier="paid", rail="x402") == 1
    assert moved("attest_payments_verified_total", route="verify/quote") == 1
    assert moved("attest_payments_settled_total", route="verify/quote") == 1
    assert moved("attest_payments_failed_total") == 0
    assert moved("attest_fetches_total", content_kind="real") == 2
    assert moved("attest_fetch_duration_seconds_count", content_kind="real") == 2
    assert moved("attest_ledger_ingests_total") == 1
    assert moved("attest_ledger_fact_changes_total") == len(facts) >= 1
    assert moved("attest_ledger_resolves_total") == 1
    assert moved("attest_ledger_recalls_total") == 1
    # Two receipts (trial and paid) and the ledger's audit head at least went to the log.
    assert moved("attest_log_append_duration_seconds_count") >= 2
    assert value(after, "attest_log_size_leaves") >= 2
    assert value(after, "attest_capacity_queue_places") == 0  # every place was left


def test_metrics_are_refused_through_a_proxy_without_the_token_and_given_with_it(service):
    base, _token, _dir, _recipe = service
    relayed = httpx.get(f"{base}/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert relayed.status_code == 404
    assert relayed.json()["error"]["code"] == "not_found"
    wrong = httpx.get(
        f"{base}/metrics",
        headers={"X-Forwarded-For": "203.0.113.9", "Authorization": "Bearer nope"},
    )
    assert wrong.status_code == 404
    allowed = httpx.get(
        f"{base}/metrics",
        headers={"X-Forwarded-For": "203.0.113.9", "Authorization": f"Bearer {TOKEN}"},
    )
    assert allowed.status_code == 200
    assert "attest_http_requests_total" in allowed.text


def command_lines(pids: list[int]) -> list[str]:
    lines = []
    for pid in pids:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except FileNotFoundError:
            continue
    return lines


def test_ctrl_c_stops_every_process_make_run_started(stoppable_service):
    base, _token, _dir, recipe = stoppable_service
    # Beside make and the recipe's shell (whose command line names them all):
    running = [
        line
        for line in command_lines(session_processes(recipe.pid))
        if not line.startswith(("make ", "/bin/sh "))
    ]
    assert any("manage.py db_worker" in line for line in running), running
    assert sum("gunicorn attest.wsgi" in line for line in running) == 4, running  # 3 workers
    interrupt(recipe)  # fails the test, naming them, if any process is left
    assert recipe.returncode is not None
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{base}/healthz", timeout=5)
