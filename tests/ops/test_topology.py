"""The deployment, tested whole: HAProxy in front of two gunicorn instances on a PostgreSQL
primary with a real streaming replica, and Redis (tests/ops/topology.py starts it).

A fact written through one instance resolves at once through the other and from the
replica once it has caught up; both instances' metrics add up to the requests sent; and
kill -9 of one instance during 200 ingests and 50 paid calls through HAProxy loses no
acknowledged write and charges nothing twice."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Q
from x402.http import decode_payment_required_header
from x402.mechanisms.evm.constants import ERR_NONCE_ALREADY_USED

from billing.models import PaymentClaim, Settlement
from citations.models import Observation
from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.billing.facilitator_server import FacilitatorServer
from tests.live_service import ROOT
from tests.ops.replica import StreamingReplica, replica_unavailable
from tests.ops.test_metrics_live import samples, value
from tests.ops.test_replicas import _replica_fact_reads, _wait_for_reads
from tests.ops.topology import Topology, makefile_flags

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(900),
]

QUOTE = "64 percent of beach samples met the bathing standard"
MESSAGE = "I moved to Dublin in March."
OCCURRED_AT = "2026-03-04T10:11:58Z"


@pytest.fixture(scope="module")
def facilitator():
    with FacilitatorServer(NETWORK) as server:
        yield server


@pytest.fixture(scope="module")
def topology(django_db_setup, django_db_blocker, facilitator, tmp_path_factory):
    with django_db_blocker.unblock():
        primary = dict(connection.settings_dict)
    why = replica_unavailable(primary)
    if why:
        pytest.skip(why)
    if shutil.which("haproxy") is None:
        pytest.skip("needs HAProxy (Debian's haproxy package; .ci/run installs it)")
    if not os.environ.get("CACHE_URL", "").startswith("redis"):
        pytest.skip("needs CACHE_URL=redis://... (the instances share Redis)")
    replica = StreamingReplica(primary).start()
    deployment = Topology(
        replica=replica,
        tmp=tmp_path_factory.mktemp("topology"),
        settings={
            "CACHE_URL": os.environ["CACHE_URL"],
            "SECRET_KEY": os.environ["SECRET_KEY"],
            "ATTEST_SIGNING_KEYS": settings.ATTEST_SIGNING_KEYS,
            "X402_FACILITATOR_URL": facilitator.url,
            "X402_NETWORK": NETWORK,
            "X402_PAY_TO": PAY_TO,
            "ATTEST_TRIAL_CALLS_PER_DAY": "0",
            "ATTEST_UNPAID_RATE": "100000/m",
            "ATTEST_HOST_RATE": "100000/m",
        },
        gunicorn_flags=[*makefile_flags("GUNICORN_LIMITS"), *makefile_flags("GUNICORN_HOOKS")],
    )
    try:
        yield deployment.start()
    finally:
        deployment.stop()
        replica.remove()


def _project_token(env) -> str:
    made = subprocess.run(
        [sys.executable, "manage.py", "create_project", f"topology-{secrets.token_hex(4)}"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return made.stdout.split()[-1]


def _ingest_body(subject: str, message_id: str) -> dict:
    return {
        "subject": subject,
        "messages": [
            {
                "id": message_id,
                "role": "user",
                "text": MESSAGE,
                "occurred_at": "2026-03-04T10:11:58Z",
            }
        ],
    }


def _until_final(send, *, deadline: float) -> httpx.Response | None:
    """Send, and again as a client would while the answer is a dropped connection, the
    balancer's 502/503 or the service's 503 with Retry-After; the final answer, or None
    if the deadline passed first."""
    while time.monotonic() < deadline:
        try:
            answer = send()
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if answer.status_code not in (502, 503, 504):
            return answer
        time.sleep(min(float(answer.headers.get("Retry-After") or 0.5), 5.0))
    return None


def test_a_write_through_one_instance_resolves_at_once_through_the_other(topology):
    a, b = topology.instances
    token = _project_token(topology.env)
    auth = {"Authorization": f"Bearer {token}"}
    written = httpx.post(
        f"{a.url}/v1/observations", headers=auth, json=_ingest_body("u1", "m1"), timeout=60
    )
    assert written.status_code == 201, written.text
    fact_id = written.json()["facts"][0]["id"]
    at_once = httpx.post(
        f"{b.url}/v1/citations/resolve", headers=auth, json={"id": fact_id}, timeout=60
    )
    assert at_once.status_code == 200, at_once.text
    assert at_once.json()["id"] == fact_id

    topology.replica.wait_caught_up()
    before = _replica_fact_reads(topology.replica)
    later = httpx.post(
        f"{b.url}/v1/citations/resolve", headers=auth, json={"id": fact_id}, timeout=60
    )
    assert later.status_code == 200
    assert later.json()["id"] == fact_id
    assert _wait_for_reads(topology.replica, before) > before  # the replica served it


def test_both_instances_metrics_add_up_to_the_requests_sent(topology):
    def scrape() -> list[dict]:
        return [samples(httpx.get(f"{i.url}/metrics", timeout=30).text) for i in topology.instances]

    def sent(scraped: list[dict]) -> float:
        return sum(
            value(s, "attest_http_requests_total", route="sample-page", method="GET")
            for s in scraped
        )

    before = scrape()
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(lambda _: httpx.get(f"{topology.url}/v1/sample/page", timeout=30), range(40))
        )
    assert {a.status_code for a in answers} == {200}
    after = scrape()
    assert sent(after) - sent(before) == 40
    # Round robin: each instance served some of them.
    for then, now in zip(before, after, strict=True):
        served = value(now, "attest_http_requests_total", route="sample-page") - value(
            then, "attest_http_requests_total", route="sample-page"
        )
        assert served > 0


def test_kill_9_of_one_instance_under_load_loses_no_write_and_charges_nothing_twice(
    topology, facilitator
):
    token = _project_token(topology.env)
    auth = {"Authorization": f"Bearer {token}"}
    page = f"{topology.url}/v1/sample/page"
    offer = httpx.post(f"{topology.url}/v1/verify/quote", json={"url": page, "quote": QUOTE})
    assert offer.status_code == 402, offer.text
    required = decode_payment_required_header(offer.headers["PAYMENT-REQUIRED"])
    payers = [Payer() for _ in range(50)]
    payments = {p.address.lower(): p.pay(required) for p in payers}

    deadline = time.monotonic() + 400
    ingests: dict[str, httpx.Response | None] = {}
    paid: dict[str, httpx.Response | None] = {}
    started = threading.Event()

    def ingest(n: int) -> None:
        started.set()
        body = _ingest_body(f"s{n}", f"m{n}")
        ingests[f"m{n}"] = _until_final(
            lambda: httpx.post(
                f"{topology.url}/v1/observations", headers=auth, json=body, timeout=120
            ),
            deadline=deadline,
        )

    def pay(payer: str) -> None:
        headers = {"PAYMENT-SIGNATURE": payments[payer]}
        paid[payer] = _until_final(
            lambda: httpx.post(
                f"{topology.url}/v1/verify/quote",
                json={"url": page, "quote": QUOTE},
                headers=headers,
                timeout=120,
            ),
            deadline=deadline,
        )

    jobs = [(ingest, n) for n in range(200)] + [(pay, p) for p in payments]
    jobs = [jobs[i] for i in sorted(range(len(jobs)), key=lambda i: (i * 7919) % len(jobs))]
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(job, arg) for job, arg in jobs]
        started.wait(30)
        time.sleep(2.0)  # under load, then one instance dies
        topology.instances[0].kill()
        for future in futures:
            future.result()

    # Every write: acknowledged (none given up on), and every acknowledged one is stored.
    assert all(answer is not None for answer in ingests.values())
    acknowledged = [m for m, answer in ingests.items() if answer.status_code in (200, 201)]
    assert len(acknowledged) == 200, {m: a.status_code for m, a in ingests.items() if a}
    stored = set(
        Observation.objects.filter(message_id__in=acknowledged).values_list("message_id", flat=True)
    )
    assert stored == set(acknowledged)

    # Every paid call ended, each payment moved money at most once, and exactly the calls
    # answered 200 were charged.
    assert all(answer is not None for answer in paid.values())
    transfers = facilitator.chain._transfers.values()
    charged_payers = [t["payer"].lower() for t in transfers if t["payer"].lower() in payments]
    assert len(charged_payers) == len(set(charged_payers))
    answered = {p for p, answer in paid.items() if answer.status_code == 200}
    assert set(charged_payers) == answered
    # Each charged claim's settlement: the facilitator's success, or, when the instance died
    # after the transfer but before writing it, the retry's settle answered "nonce already
    # used" (the money moved once, by the first settle) and the claim was settled on it.
    proofs = Settlement.objects.filter(payer__in=list(payments)).filter(
        Q(success=True)
        | Q(error_reason=ERR_NONCE_ALREADY_USED, claim__state=PaymentClaim.State.SETTLED)
    )
    assert sorted(proofs.values_list("payer", flat=True)) == sorted(answered)
    assert len(answered) >= 45, {p: a.status_code for p, a in paid.items()}


def test_stopping_the_replica_moves_reads_to_the_primary_with_no_error(topology):
    """Last: it stops the replica. Reads through HAProxy go on, answered by the primary."""
    token = _project_token(topology.env)
    auth = {"Authorization": f"Bearer {token}"}
    written = _until_final(
        lambda: httpx.post(
            f"{topology.url}/v1/observations",
            headers=auth,
            json=_ingest_body("u-down", "m-down"),
            timeout=60,
        ),
        deadline=time.monotonic() + 60,
    )
    assert written is not None and written.status_code == 201, written and written.text
    fact_id = written.json()["facts"][0]["id"]
    topology.replica.wait_caught_up()
    topology.replica.stop()
    for _ in range(6):
        resolved = httpx.post(
            f"{topology.url}/v1/citations/resolve", headers=auth, json={"id": fact_id}, timeout=60
        )
        assert resolved.status_code == 200, resolved.text
        assert resolved.json()["id"] == fact_id
    recalled = httpx.post(
        f"{topology.url}/v1/recall", headers=auth, json={"subject": "u-down"}, timeout=60
    )
    assert recalled.status_code == 200, recalled.text
    assert [fact["id"] for fact in recalled.json()["facts"]] == [fact_id]
