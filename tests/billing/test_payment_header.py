"""Reading the payment header: a pure function of the header text, no database."""

from __future__ import annotations

import base64
import json

import pytest
from x402 import PaymentRequirements

from billing.core.payment_header import (
    MAX_PAYMENT_HEADER_CHARS,
    MalformedAuthorization,
    decode_payment,
    payment_digest,
    read_authorization,
)

REQUIREMENT = PaymentRequirements(
    scheme="exact",
    network="eip155:84532",
    asset="0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    amount="10000",
    pay_to="0x1111111111111111111111111111111111111111",
    max_timeout_seconds=600,
    extra={"name": "USDC", "version": "2"},
)
AUTHORIZATION = {
    "from": "0xAbCdEf0000000000000000000000000000000001",
    "to": "0x1111111111111111111111111111111111111111",
    "value": "10000",
    "validAfter": "0",
    "validBefore": "1900000000",
    "nonce": "0x" + "ab" * 32,
}
INNER = {"authorization": AUTHORIZATION, "signature": "0x" + "12" * 65}


def _b64(value) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def _v2(inner=INNER) -> str:
    accepted = REQUIREMENT.model_dump(mode="json", by_alias=True)
    return _b64({"x402Version": 2, "accepted": accepted, "payload": inner})


def _v1(network="base-sepolia", inner=INNER) -> str:
    return _b64({"x402Version": 1, "scheme": "exact", "network": network, "payload": inner})


def test_v2_header_decodes_to_its_payload():
    payload = decode_payment(_v2(), REQUIREMENT)
    assert payload is not None and payload.payload == INNER


def test_v1_header_is_bound_to_our_own_requirement():
    payload = decode_payment(_v1(), REQUIREMENT)
    assert payload is not None
    assert payload.accepted == REQUIREMENT


@pytest.mark.parametrize(
    "header",
    [
        "not base64 at all!",
        _b64([1, 2]),
        _b64({"payload": INNER}),  # no version: the SDK would read it as v2
        _b64({"x402Version": 3, "payload": INNER}),
        _b64({"x402Version": True, "payload": INNER}),
        _b64({"x402Version": 2}),
        _b64({"x402Version": 2, "payload": INNER, "accepted": "x" * 100}),
        base64.b64encode(b"[" * 100_000).decode()[:MAX_PAYMENT_HEADER_CHARS],
        _v2() + "A" * MAX_PAYMENT_HEADER_CHARS,  # over the size limit
    ],
    ids=[
        "garbage",
        "json_list",
        "no_version",
        "version_3",
        "version_bool",
        "no_payload",
        "bad_accepted",
        "deep_nesting",
        "too_long",
    ],
)
def test_malformed_headers_decode_to_none(header):
    assert decode_payment(header, REQUIREMENT) is None


def test_v1_payment_for_another_network_does_not_decode_though_well_formed():
    assert decode_payment(_v1(network="base"), REQUIREMENT) is None


def test_authorization_is_read_in_canonical_lower_case():
    authorization = read_authorization(INNER)
    assert authorization.payer == AUTHORIZATION["from"].lower()
    assert authorization.nonce == "0x" + "ab" * 32
    assert authorization.valid_before == 1_900_000_000


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("from", "0x123"),
        ("nonce", "0x" + "ab" * 31),
        ("value", "1e4"),
        ("validBefore", "-1"),
        ("validBefore", 1900000000),
        ("to", None),
    ],
)
def test_authorization_in_a_non_canonical_spelling_is_malformed(field, value):
    inner = {**INNER, "authorization": {**AUTHORIZATION, field: value}}
    with pytest.raises(MalformedAuthorization):
        read_authorization(inner)


def test_a_payload_without_an_authorization_is_malformed():
    with pytest.raises(MalformedAuthorization):
        read_authorization({"signature": "0x12"})


def test_the_same_authorization_is_the_same_payment_in_v1_and_v2():
    v2 = decode_payment(_v2(), REQUIREMENT)
    v1 = decode_payment(_v1(), REQUIREMENT)
    assert payment_digest(v1) == payment_digest(v2)
    other = {**INNER, "signature": "0x" + "34" * 65}
    assert payment_digest(decode_payment(_v2(other), REQUIREMENT)) != payment_digest(v2)
