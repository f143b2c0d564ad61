"""Prepaid credit across processes, on PostgreSQL: two gunicorn instances share one balance.

40 calls in parallel on a balance that pays for 25 draw exactly 25 prices and answer the
rest 402 insufficient_credit, never below zero; the same x402 payment sent to both
instances at once tops up once; a worker killed with SIGKILL while holding a price leaves
a hold that the recovery of stale holds gives back.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
import uuid

import httpx
import pytest
from django.utils import timezone
from x402.http import decode_payment_required_header

from billing.models import CreditAccount, CreditHold, MoneyEvent
from billing.owners import owner_of
from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.billing.gunicorn_server import GunicornServer, makefile_gunicorn_limits

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CALLS = 40
PAID_FOR = 25  # US$0.25 at verify/quote's US$0.01


@pytest.fixture(scope="module")
def servers(django_db_setup, django_db_blocker, tmp_path_factory):
    env = {
        "X402_FACILITATOR_URL": "",  # the built-in local facilitator, in the shared database
        "X402_NETWORK": NETWORK,
        "X402_PAY_TO": PAY_TO,
        "ATTEST_TRIAL_CALLS_PER_DAY": "0",
        "ATTEST_UNPAID_RATE": "100000/m",
    }
    with django_db_blocker.unblock():
        pair = [
            GunicornServer(
                tmp_path_factory.mktemp(f"credit{i}"), env=env, limits=makefile_gunicorn_limits()
            )
            for i in range(2)
        ]
    yield pair
    for server in pair:
        server.stop()


def _in_parallel(sends) -> list:
    results: list = [None] * len(sends)
    start = threading.Barrier(len(sends))

    def run(index: int) -> None:
        start.wait()
        results[index] = sends[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sends))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def _top_up_payment(server: GunicornServer, payer: Payer, amount: str) -> str:
    offered = httpx.post(f"{server.url}/v1/credits", json={"amount": amount}, timeout=60)
    assert offered.status_code == 402, offered.text
    payer.client.set_spend_controls({"max_amount_per_payment": "$100"})
    return payer.pay(decode_payment_required_header(offered.headers["PAYMENT-REQUIRED"]))


def _buy(servers, amount: str) -> str:
    """A new project with ``amount`` of credit, its payment sent to both instances at once."""
    payment = _top_up_payment(servers[0], Payer(), amount)

    def send(server):
        return lambda: httpx.post(
            f"{server.url}/v1/credits",
            json={"amount": amount},
            headers={"PAYMENT-SIGNATURE": payment},
            timeout=60,
        )

    answers = _in_parallel([send(server) for server in servers])
    created = [a for a in answers if a.status_code == 201]
    # One claims and tops up; the other is that claim's retry: the same answer, or a
    # 503 while the first is still settling. Never two top-ups. Known gap (closing note of
    # 2026-12-06): when the retry reaches the other instance only after the first answered,
    # it can get a 402 instead of the stored answer; the money still moves once.
    assert created, [a.text for a in answers]
    assert all(a.status_code in (201, 402, 503) for a in answers), [a.text for a in answers]
    assert {a.content for a in created} == {created[0].content}
    return created[0].json()["credential"]


def _spend(server, credential: str, *, outcome: str = "real", request_id: str = ""):
    headers = {"Authorization": f"Bearer {credential}"}
    if request_id:
        headers["X-Request-ID"] = request_id
    return httpx.post(
        f"{server.url}/v1/test/verify/quote",
        json={"outcome": outcome},
        headers=headers,
        timeout=120,
    )


def _account(credential: str) -> CreditAccount:
    """The project's own account: the tests read no other row (another test's may be there)."""
    return CreditAccount.objects.get(owner=owner_of(credential))


def test_the_same_top_up_sent_to_two_instances_at_once_tops_up_once(servers):
    account = _account(_buy(servers, "0.50"))
    assert account.balance == 500_000
    assert MoneyEvent.objects.filter(kind="top_up", account=account).count() == 1


def test_forty_parallel_calls_on_a_balance_for_25_draw_exactly_25(servers):
    credential = _buy(servers, "0.25")
    answers = _in_parallel(
        [(lambda server=servers[i % 2]: _spend(server, credential)) for i in range(CALLS)]
    )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * PAID_FOR + [402] * (CALLS - PAID_FOR), [a.text for a in answers]
    for refused in (a for a in answers if a.status_code == 402):
        details = refused.json()["error"]["details"]
        assert details["reason"] == "insufficient_credit"
        assert details["balance"] == "0.00"
    account = _account(credential)
    assert account.balance == 0
    assert MoneyEvent.objects.filter(kind="draw", account=account).count() == PAID_FOR
    assert CreditHold.objects.filter(state="drawn", account=account).count() == PAID_FOR


def test_a_hold_of_a_killed_worker_is_released_by_recovery(servers):
    credential = _buy(servers, "0.10")
    server = servers[0]
    request_id = f"hold-{uuid.uuid4().hex}"
    dying = threading.Thread(
        target=lambda: _try(
            lambda: _spend(server, credential, outcome="hold", request_id=request_id)
        ),
        daemon=True,
    )
    dying.start()
    deadline = timezone.now() + datetime.timedelta(seconds=60)
    while not CreditHold.objects.filter(state="held").exists():
        assert timezone.now() < deadline, "the hold never appeared"
    assert CreditAccount.objects.get().balance == 90_000
    server.kill_worker()
    dying.join(30)
    # Time passing: the dead call's lease runs out (it would after verify/quote's 90 s).
    CreditHold.objects.filter(state="held").update(
        lease_until=timezone.now() - datetime.timedelta(seconds=1)
    )
    read = httpx.get(
        f"{servers[1].url}/v1/credits",
        headers={"Authorization": f"Bearer {credential}"},
        timeout=30,
    )
    assert read.status_code == 200, read.text
    assert read.json()["balance"] == "0.10"
    hold = CreditHold.objects.get()
    assert (hold.state, hold.outcome) == ("released", "abandoned_mid_work")
    assert [m["type"] for m in read.json()["movements"]] == ["release", "hold", "top_up"]


def _try(send) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the worker is killed under it
        send()
