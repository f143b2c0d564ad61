"""The SQL statements one verify/quote call sends, per rail, held so they cannot creep back.

Counted as production sends them (no test transaction around the call, so a service's
transaction is a real one, not a savepoint), once robots.txt is known, on each store the
shared limits may live in (the database under ``make run``, Redis as production runs).
A transaction's BEGIN and COMMIT are not counted (Django shows them on SQLite only; the
PostgreSQL driver sends them unseen); a savepoint and its release are.
The built-in local facilitator's own rows stand in for the chain a real facilitator
settles on over HTTP: they are counted apart and not held here.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from attest.shared_state import in_redis
from billing.services import answers
from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page

pytestmark = pytest.mark.django_db(transaction=True)

ARTICLE = "<html><body><p>The committee said the review is overdue.</p></body></html>"
BODY = {"quote": "the review is overdue"}

_BRACKETS = {"BEGIN", "BEGIN IMMEDIATE", "COMMIT"}
# At most this many statements a call: (database, shared store) -> rail -> count.
MOST = {
    ("sqlite", "database"): {"trial": 15, "credit": 16, "x402": 18},
    ("postgresql", "redis"): {"trial": 6, "credit": 10, "x402": 13},
    ("postgresql", "database"): {"trial": 14, "credit": 15, "x402": 17},
}


@pytest.fixture(autouse=True)
def paid(settings):
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0


@pytest.fixture
def body(pages) -> dict:
    pages.routes["/article"] = page(ARTICLE)
    return {**BODY, "url": pages.url("/article")}


def _most(rail: str) -> int:
    store = "redis" if in_redis() else "database"
    key = (connection.vendor, store)
    if key not in MOST:
        pytest.skip(f"no count is held for {key}")
    return MOST[key][rail]


def _statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, response.content
    sent = [query["sql"] for query in queries.captured_queries]
    return [sql for sql in sent if "billing_localtransfer" not in sql and sql not in _BRACKETS]


def _held(rail: str, statements: list[str]) -> None:
    most = _most(rail)
    listing = "\n".join(sql[:120] for sql in statements)
    assert len(statements) <= most, f"{len(statements)} statements, at most {most}:\n{listing}"


def test_a_trial_call(api, body, settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 5
    api.post("/v1/verify/quote", body, format="json")  # robots.txt read and kept
    statements = _statements(lambda: api.post("/v1/verify/quote", body, format="json"))
    _held("trial", statements)


def test_a_call_paid_from_credit(api, body):
    offer = decode_offer(api.post("/v1/credits", {"amount": "1.00"}, format="json"))
    bought = api.post(
        "/v1/credits", {"amount": "1.00"}, format="json", HTTP_PAYMENT_SIGNATURE=Payer().pay(offer)
    )
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {bought.json()['credential']}"}
    api.post("/v1/verify/quote", body, format="json", **bearer)
    statements = _statements(lambda: api.post("/v1/verify/quote", body, format="json", **bearer))
    _held("credit", statements)
    assert statements, "a paid call writes its money events"


def test_a_call_paid_over_x402(api, body, monkeypatch):
    payer = Payer()
    offer = decode_offer(api.post("/v1/verify/quote", body, format="json"))
    api.post("/v1/verify/quote", body, format="json", HTTP_PAYMENT_SIGNATURE=payer.pay(offer))
    monkeypatch.setattr(answers, "_stored_since_prune", 0)  # not the call that prunes
    payment = payer.pay(offer)
    statements = _statements(
        lambda: api.post("/v1/verify/quote", body, format="json", HTTP_PAYMENT_SIGNATURE=payment)
    )
    _held("x402", statements)
