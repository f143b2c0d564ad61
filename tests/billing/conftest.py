"""Payers that sign for real, offers decoded with the SDK, and billing's test settings."""

from __future__ import annotations

import pytest
from eth_account import Account
from x402 import PaymentPayload, PaymentRequired, x402ClientSync
from x402.http import decode_payment_required_header, encode_payment_signature_header
from x402.mechanisms.evm.exact import ExactEvmClientScheme

NETWORK = "eip155:84532"
PAY_TO = "0x1111111111111111111111111111111111111111"


@pytest.fixture(autouse=True)
def billing_settings(settings):
    settings.X402_NETWORK = NETWORK
    settings.X402_PAY_TO = PAY_TO
    settings.X402_FACILITATOR_URL = ""
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.ATTEST_TRUSTED_PROXIES = ()
    return settings


class Payer:
    """A throwaway key that pays through the SDK's own client."""

    def __init__(self) -> None:
        self.account = Account.create()
        self.client = x402ClientSync()
        self.client.register(NETWORK, ExactEvmClientScheme(self.account))

    @property
    def address(self) -> str:
        return self.account.address

    def pay(self, offer: PaymentRequired) -> str:
        return encode_payment_signature_header(self.client.create_payment_payload(offer))

    def pay_tampered(self, offer: PaymentRequired, **signed_changes) -> str:
        """Echo the server's requirement but sign an authorization with other terms."""
        accepted = offer.accepts[0]
        signed = accepted.model_copy(update=signed_changes)
        inner = ExactEvmClientScheme(self.account).create_payment_payload(signed)
        payload = PaymentPayload(payload=inner, accepted=accepted, resource=offer.resource)
        return encode_payment_signature_header(payload)


@pytest.fixture
def payer() -> Payer:
    return Payer()


def decode_offer(response) -> PaymentRequired:
    assert response.status_code == 402, response.content
    return decode_payment_required_header(response["PAYMENT-REQUIRED"])


def post(
    api,
    route: str = "verify/quote",
    outcome: str = "real",
    payment: str | None = None,
    *,
    request_id: str | None = None,
    origin: str | None = None,
    **body,
):
    headers = {"HTTP_PAYMENT_SIGNATURE": payment} if payment else {}
    if request_id:
        headers["HTTP_X_REQUEST_ID"] = request_id
    if origin:
        headers["HTTP_ORIGIN"] = origin
    return api.post(f"/v1/test/{route}", {"outcome": outcome, **body}, format="json", **headers)


@pytest.fixture
def offer(api):
    """The 402 offer for a route, fetched the way a client would."""

    def fetch(route: str = "verify/quote") -> PaymentRequired:
        return decode_offer(post(api, route))

    return fetch
