"""The built-in facilitator checks what a token contract would, for real signatures."""

from __future__ import annotations

import base64
import json

import pytest
from x402 import PaymentPayload

from billing.local_facilitator import build_local_facilitator
from billing.models import LocalTransfer
from tests.billing.conftest import NETWORK, decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def _payload(header: str) -> PaymentPayload:
    return PaymentPayload.model_validate(json.loads(base64.b64decode(header)))


@pytest.fixture
def requirement(offer):
    return offer().accepts[0]


def test_expired_authorization_fails_verification(payer, offer, requirement):
    facilitator = build_local_facilitator(NETWORK)
    payload = _payload(payer.pay_tampered(offer(), max_timeout_seconds=-60))
    result = facilitator.verify(payload, requirement)
    assert not result.is_valid
    assert result.invalid_reason == "invalid_exact_evm_payload_authorization_valid_before"


def test_not_yet_valid_authorization_fails_verification(payer, offer, requirement):
    facilitator = build_local_facilitator(NETWORK)
    payload = _payload(payer.pay(offer()))
    payload.payload["authorization"]["validAfter"] = str(2**40)
    result = facilitator.verify(payload, requirement)
    assert not result.is_valid
    # The signature covers validAfter, so changing it breaks the signature or the window.
    assert result.invalid_reason in {
        "invalid_exact_evm_payload_authorization_valid_after",
        "invalid_exact_evm_payload_signature",
    }


def test_settlement_is_recorded_with_a_transaction_like_id_and_nonce_is_spent(
    payer, offer, requirement
):
    facilitator = build_local_facilitator(NETWORK)
    payload = _payload(payer.pay(offer()))
    assert facilitator.verify(payload, requirement).is_valid
    settled = facilitator.settle(payload, requirement)
    assert settled.success, settled
    transfer = LocalTransfer.objects.get()
    assert settled.transaction == transfer.transaction
    assert int(transfer.transaction, 16) > 0 and len(transfer.transaction) == 66
    assert transfer.payer == payer.address.lower()
    assert transfer.pay_to == requirement.pay_to.lower()
    assert transfer.nonce == payload.payload["authorization"]["nonce"].lower()
    again = facilitator.verify(payload, requirement)
    assert again.invalid_reason == "invalid_exact_evm_nonce_already_used"
    assert not facilitator.settle(payload, requirement).success
    assert LocalTransfer.objects.count() == 1


def test_every_payer_is_funded(offer, requirement):
    from tests.billing.conftest import Payer

    fresh = Payer()  # a key that has never held a token anywhere
    payload = _payload(fresh.pay(offer()))
    assert build_local_facilitator(NETWORK).verify(payload, requirement).is_valid


def test_nothing_contacts_a_facilitator_at_import(api, settings):
    """Importing billing and a priced URLconf sends nothing; the first paid call does."""
    import os
    import subprocess
    import sys

    from tests.billing.facilitator_server import FacilitatorServer

    with FacilitatorServer(NETWORK) as canary:
        env = {
            **os.environ,
            "X402_FACILITATOR_URL": canary.url,
            "DJANGO_SETTINGS_MODULE": "attest.settings",
        }
        code = (
            "import django; django.setup(); "
            "import billing.services, billing.decorators, billing.admin, tests.billing.urls"
        )
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
        assert canary.calls == []
        settings.X402_FACILITATOR_URL = canary.url
        decode_offer(post(api))
        assert canary.calls == ["/supported"]
