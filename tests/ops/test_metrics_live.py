"""/metrics through a real gunicorn started as `make run` starts it (three sync workers,
--preload, the metrics directory and attest.gunicorn_hooks): one view across the workers,
and the counters move with the work: requests, a trial and a paid verify call, payments,
fetches, the ledger and the transparency log."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families
from x402.http import decode_payment_required_header

from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.billing.facilitator_server import FacilitatorServer
from tests.billing.gunicorn_server import _suite_shared
from tests.live_service import (
    ROOT,
    free_port,
    gunicorn_command,
    migrate,
    server_env,
    serving,
    shared_database,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

TOKEN = "scrape-" + "x" * 24
QUOTE = "64 percent of beach samples met the bathing standard"


def _makefile_flags(name: str) -> list[str]:
    text = (ROOT / "Makefile").read_text()
    return shlex.split(re.search(rf"^{name}\s*:?=\s*(.*)$", text, re.M).group(1))


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


@pytest.fixture
def service(tmp_path, django_db_blocker):
    metrics_dir = tmp_path / "prometheus"
    metrics_dir.mkdir()
    # What an earlier run left: the hooks must empty the directory as gunicorn starts.
    (metrics_dir / "counter_99999.db").write_bytes(b"\0" * 16)
    port = free_port()
    db_url, needs_migrate = shared_database(tmp_path)
    with FacilitatorServer(NETWORK) as facilitator:
        env = server_env(
            **_suite_shared(),  # on PostgreSQL every host shares the secret key
            DATABASE_URL=db_url,
            ATTEST_VAR_DIR=str(tmp_path),
            ATTEST_SIGNING_KEYS=settings.ATTEST_SIGNING_KEYS,
            ATTEST_PUBLIC_URL=f"http://127.0.0.1:{port}",
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
            ATTEST_METRICS_TOKEN=TOKEN,
            ATTEST_TRIAL_CALLS_PER_DAY="1",
            X402_FACILITATOR_URL=facilitator.url,
            X402_NETWORK=NETWORK,
            X402_PAY_TO=PAY_TO,
            PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
        )
        with django_db_blocker.unblock():
            if needs_migrate:
                migrate(env)
            token = subprocess.run(
                [sys.executable, "manage.py", "create_project", "metrics"],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            ).stdout.split()[-1]
        command = gunicorn_command(
            port,
            workers=3,
            threads=1,
            extra=[
                "--preload",
                *_makefile_flags("GUNICORN_LIMITS"),
                *_makefile_flags("GUNICORN_HOOKS"),
            ],
        )
        with serving(command, port=port, env=env, log=tmp_path / "gunicorn.log") as base:
            yield base, token, metrics_dir


def scrape(base: str) -> dict:
    response = httpx.get(f"{base}/metrics", timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


def test_counters_of_every_worker_add_up_and_move_with_the_work(service):
    base, token, metrics_dir = service
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
    base, _token, _dir = service
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
