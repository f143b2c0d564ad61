"""Prepaid credit: bought over x402 at POST /v1/credits, spent by a Bearer credential on any
priced route (hold, draw, release), read at GET /v1/credits. Paid through the built-in
local facilitator with real EIP-3009 signatures, as every billing test."""

from __future__ import annotations

import datetime
import threading

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from billing.models import CreditAccount, CreditHold, LocalTransfer, MoneyEvent, PaymentClaim
from citations.models import Credential, Project
from citations.services import credential_revoke
from tests.billing.conftest import NETWORK, decode_offer, post
from tests.billing.facilitator_server import FacilitatorServer

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def buy(api, payer, amount: str = "1.00", *, credential: str | None = None, payment=None):
    """POST /v1/credits paid over x402: the offer first, then the signed payment."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {credential}"} if credential else {}
    # The SDK caps one payment at US$1 unless told otherwise; a top-up may be US$100.
    payer.client.set_spend_controls({"max_amount_per_payment": "$100"})
    if payment is None:
        offer = decode_offer(api.post("/v1/credits", {"amount": amount}, format="json", **headers))
        payment = payer.pay(offer)
    return api.post(
        "/v1/credits",
        {"amount": amount},
        format="json",
        HTTP_PAYMENT_SIGNATURE=payment,
        **headers,
    )


@pytest.fixture
def funded(api, payer):
    """A new project bought with ``amount`` of credit: its credential."""

    def make(amount: str = "1.00") -> str:
        response = buy(api, payer, amount)
        assert response.status_code == 201, response.content
        return response.json()["credential"]

    return make


def spend(api, credential: str, route: str = "verify/quote", outcome: str = "real", **body):
    return api.post(
        f"/v1/test/{route}",
        {"outcome": outcome, **body},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {credential}",
    )


def statement(api, credential: str, **query) -> dict:
    response = api.get("/v1/credits", query, HTTP_AUTHORIZATION=f"Bearer {credential}")
    assert response.status_code == 200, response.content
    return response.json()


# --- buying credit ---------------------------------------------------------------


def test_unpaid_top_up_is_the_offer_for_exactly_that_amount(api):
    response = api.post("/v1/credits", {"amount": "5.00"}, format="json")
    offer = decode_offer(response)
    assert offer.accepts[0].amount == "5000000"  # USDC's six decimals: micro-USD
    assert response.json()["error"]["details"]["reason"] == "payment_required"
    assert not PaymentClaim.objects.exists()


@pytest.mark.parametrize("amount", ["0.09", "100.01", "1.234", "abc", 5, "", " 5.00", "-1"])
def test_an_amount_out_of_range_or_shape_is_400_before_any_offer(api, amount):
    response = api.post("/v1/credits", {"amount": amount}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"]["field"] == "amount"


def test_paid_without_a_credential_makes_a_project_and_shows_its_credential_once(api, payer):
    response = buy(api, payer, "5.00")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["balance"], body["currency"], body["rail"]) == ("5.00", "USD", "x402")
    project = Project.objects.get(name=body["project"])
    credential = Credential.objects.get(project=project)
    assert body["credential"].startswith(f"att_{credential.prefix}_")
    assert body["credential"] not in credential.secret_sha256  # only its hash is kept
    assert CreditAccount.objects.get(owner=f"project:{project.pk}").balance == 5_000_000
    read = statement(api, body["credential"])
    assert read["balance"] == "5.00"
    assert [(m["type"], m["amount"]) for m in read["movements"]] == [("top_up", "5.00")]


def test_paid_with_a_credential_tops_up_that_project(api, payer, funded):
    credential = funded("1.00")
    response = buy(api, payer, "2.50", credential=credential)
    assert response.status_code == 200, response.content
    assert "credential" not in response.json()
    assert response.json()["balance"] == "3.50"
    assert statement(api, credential)["balance"] == "3.50"
    assert Project.objects.count() == 1


def test_the_same_payment_twice_tops_up_once(api, payer, funded):
    credential = funded("1.00")
    offer = decode_offer(
        api.post(
            "/v1/credits",
            {"amount": "2.00"},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {credential}",
        )
    )
    payer.client.set_spend_controls({"max_amount_per_payment": "$100"})
    payment = payer.pay(offer)
    first = buy(api, payer, "2.00", credential=credential, payment=payment)
    again = buy(api, payer, "2.00", credential=credential, payment=payment)
    assert first.status_code == again.status_code == 200
    assert first.content == again.content  # the stored answer, not a second top-up
    assert statement(api, credential)["balance"] == "3.00"
    assert MoneyEvent.objects.filter(kind="top_up").count() == 2  # the 1.00 and the 2.00
    assert LocalTransfer.objects.count() == 2


def test_the_same_payment_without_a_credential_again_gets_the_same_new_project(api, payer):
    payer.client.set_spend_controls({"max_amount_per_payment": "$100"})
    payment = payer.pay(decode_offer(api.post("/v1/credits", {"amount": "0.50"}, format="json")))
    first = buy(api, payer, "0.50", payment=payment)
    again = buy(api, payer, "0.50", payment=payment)
    assert first.status_code == again.status_code == 201, again.content
    assert first.content == again.content  # the one credential, shown again to its payer
    assert Project.objects.count() == 1
    assert statement(api, first.json()["credential"])["balance"] == "0.50"
    assert MoneyEvent.objects.filter(kind="top_up").count() == 1


@pytest.mark.django_db(transaction=True)  # two requests, each in its own thread
def test_a_retry_verified_only_after_the_first_answered_gets_the_stored_answer(
    api, payer, settings
):
    """The retry finds no claim yet, then its verify reaches the facilitator only after
    the first request has claimed, topped up and settled: the facilitator refuses the used
    nonce, and the retry is still owed the first request's answer, not a 402."""
    with FacilitatorServer(NETWORK) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        payer.client.set_spend_controls({"max_amount_per_payment": "$100"})
        offered = api.post("/v1/credits", {"amount": "0.50"}, format="json")
        payment = payer.pay(decode_offer(offered))
        verify_held = facilitator.hold_next_verify()
        retry = _in_thread(lambda: buy(APIClient(), payer, "0.50", payment=payment))
        assert verify_held.wait(60), "the retry never asked the facilitator to verify"
        first = buy(api, payer, "0.50", payment=payment)
        assert first.status_code == 201, first.content
        facilitator.let_verify()
        late = retry()
    assert late.status_code == 201, late.content
    assert late.content == first.content
    assert Project.objects.count() == 1
    assert CreditAccount.objects.get().balance == 500_000
    assert MoneyEvent.objects.filter(kind="top_up").count() == 1
    assert facilitator.landed == 1


def _in_thread(send):
    """Start ``send`` in a thread of its own (its own connection); call the result to join
    it and get what ``send`` returned."""
    result: list = []

    def run() -> None:
        try:
            result.append(send())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()

    def join():
        thread.join(120)
        assert result, "the request in the thread did not answer"
        return result[0]

    return join


def test_a_top_up_for_an_unknown_credential_is_401_before_any_payment(api):
    response = api.post(
        "/v1/credits",
        {"amount": "1.00"},
        format="json",
        HTTP_AUTHORIZATION="Bearer att_0123456789ab_nope",
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_credential"


def test_credit_does_not_pay_for_credit(api, funded):
    credential = funded("1.00")
    response = api.post(
        "/v1/credits", {"amount": "0.50"}, format="json", HTTP_AUTHORIZATION=f"Bearer {credential}"
    )
    assert decode_offer(response)
    assert statement(api, credential)["balance"] == "1.00"


# --- spending credit ---------------------------------------------------------------


def test_a_credential_pays_a_priced_call_from_its_balance(api, funded):
    credential = funded("1.00")
    response = spend(api, credential)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["tier"], body["rail"]) == ("paid", "credit")
    assert "network" not in body and "PAYMENT-RESPONSE" not in response
    read = statement(api, credential)
    assert read["balance"] == "0.99"
    assert [(m["type"], m["amount"], m.get("route")) for m in read["movements"][:2]] == [
        ("draw", "0.01", "verify/quote"),
        ("hold", "0.01", "verify/quote"),
    ]
    assert CreditHold.objects.get().state == "drawn"


@pytest.mark.parametrize("outcome", ["http_404", "bot_wall", "timeout"])
def test_page_results_are_drawn(api, funded, outcome):
    credential = funded("1.00")
    assert spend(api, credential, outcome=outcome).status_code == 200
    assert statement(api, credential)["balance"] == "0.99"


@pytest.mark.parametrize(
    "outcome",
    ["host_not_found", "match_too_costly", "robots_disallowed", "over_capacity", "crash"],
)
def test_uncharged_outcomes_release_the_hold(api, funded, outcome):
    credential = funded("1.00")
    api.raise_request_exception = False  # "crash" is a 500, as a server answers it
    response = spend(api, credential, outcome=outcome)
    assert response.status_code >= 400
    read = statement(api, credential)
    assert read["balance"] == "1.00"
    assert [m["type"] for m in read["movements"][:2]] == ["release", "hold"]
    expected = "server_error" if outcome == "crash" else response.json()["error"]["code"]
    assert CreditHold.objects.get().outcome == expected


def test_a_bad_body_is_400_and_holds_nothing(api, funded):
    credential = funded("1.00")
    response = spend(api, credential, outcome="no-such-outcome")
    assert response.status_code == 400
    assert not CreditHold.objects.exists()


def test_a_batch_draws_its_price_once(api, funded):
    credential = funded("1.00")
    assert spend(api, credential, route="verify/citations", citations=10).status_code == 200
    read = statement(api, credential)
    assert read["balance"] == "0.90"
    assert [m["type"] for m in read["movements"]].count("draw") == 1


def test_short_balance_is_402_insufficient_credit_with_the_offer(api, funded):
    credential = funded("0.10")
    assert spend(api, credential, route="verify/citations").status_code == 200  # 0.10
    response = spend(api, credential, route="verify/quote")
    offer = decode_offer(response)
    assert offer.accepts[0].amount == "10000"
    error = response.json()["error"]
    assert error["details"]["reason"] == "insufficient_credit"
    assert error["details"]["balance"] == "0.00"
    assert "POST /v1/credits" in error["message"] and "PAYMENT-REQUIRED" in error["message"]
    assert CreditAccount.objects.get().balance == 0


def test_a_credit_call_never_uses_the_trial(api, funded, settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 5
    credential = funded("0.10")
    assert spend(api, credential, route="verify/citations").status_code == 200
    response = spend(api, credential)
    assert response.status_code == 402
    assert response.json()["error"]["details"]["reason"] == "insufficient_credit"
    # without the credential the same caller still has its trial
    assert post(api).json()["tier"] == "trial"


def test_unknown_revoked_or_suspended_credentials_are_401_never_a_trial(api, funded, settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 5
    unknown = spend(api, "att_0123456789ab_nope")
    assert unknown.status_code == 401
    assert unknown.json()["error"]["code"] == "invalid_credential"
    assert unknown["WWW-Authenticate"].startswith("Bearer")
    credential = funded("1.00")
    project = Project.objects.get()
    project.suspended_at = timezone.now()
    project.save()
    assert spend(api, credential).json()["error"]["code"] == "invalid_credential"
    project.suspended_at = None
    project.save()
    credential_revoke(credential=Credential.objects.get(), actor="test")
    assert spend(api, credential).json()["error"]["code"] == "invalid_credential"
    assert CreditAccount.objects.get().balance == 1_000_000


def test_a_payment_header_wins_over_a_credential(api, payer, offer, funded):
    credential = funded("1.00")
    payment = payer.pay(offer())
    response = api.post(
        "/v1/test/verify/quote",
        {"outcome": "real"},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {credential}",
        HTTP_PAYMENT_SIGNATURE=payment,
    )
    assert response.status_code == 200
    assert response.json()["rail"] == "x402"
    assert statement(api, credential)["balance"] == "1.00"


def test_a_dead_calls_hold_is_released_by_recovery(api, funded):
    credential = funded("1.00")
    account = CreditAccount.objects.get()
    CreditAccount.objects.filter(pk=account.pk).update(balance=990_000)
    CreditHold.objects.create(
        account=account,
        route="verify/quote",
        amount=10_000,
        lease_until=timezone.now() - datetime.timedelta(seconds=1),
    )
    read = statement(api, credential)
    assert read["balance"] == "1.00"
    assert CreditHold.objects.get().outcome == "abandoned_mid_work"


def test_a_call_that_outlived_its_recovered_hold_is_drawn_again(api, funded):
    from billing.pricing import priced_route
    from billing.services.credit import credit_draw, credit_hold, credit_recover

    funded("1.00")
    owner = CreditAccount.objects.get().owner
    hold = credit_hold(owner=owner, route=priced_route("verify/quote"), request_id="r")
    CreditHold.objects.filter(pk=hold.pk).update(lease_until=timezone.now())
    assert credit_recover(owner) == 1
    credit_draw(hold)  # the work finished after all: charged once
    assert CreditAccount.objects.get().balance == 990_000
    assert list(MoneyEvent.objects.filter(hold=hold).values_list("kind", flat=True)) == [
        "draw",
        "release",
        "hold",
    ]


def test_movements_are_paged(api, funded):
    credential = funded("1.00")
    for _ in range(3):
        spend(api, credential)
    first = statement(api, credential, limit=4)
    assert len(first["movements"]) == 4
    rest = statement(api, credential, limit=4, after=first["next"])
    assert "next" not in rest
    kinds = [m["type"] for m in first["movements"] + rest["movements"]]
    assert kinds == ["draw", "hold"] * 3 + ["top_up"]


def test_reading_credit_needs_a_credential(api):
    assert api.get("/v1/credits").status_code == 401
    bad = api.get("/v1/credits", HTTP_AUTHORIZATION="Bearer att_0123456789ab_nope")
    assert bad.status_code == 401
