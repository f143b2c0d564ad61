"""Receipt payloads: canonical bytes, strict fields, and never the quote text."""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest_core.canonical import b64url_decode_strict, b64url_encode, canonical_json
from receipts.payloads import PageClaims, ReceiptClaims, ResultClaims, quote_sha256
from tests.receipts.samples import QUOTE, decode_part, issue_sample, sample_pages, sample_results

MOMENT = datetime(2026, 10, 9, 14, 19, 34, 903_000, tzinfo=UTC)


def claims(**overrides) -> ReceiptClaims:
    values = {
        "issuer": "https://attest.example",
        "issued_at": MOMENT,
        "route": "verify/quote",
        "request_id": "req-7",
        "tier": "trial",
        "pages": sample_pages(),
        "results": sample_results(),
        "extra": {},
    }
    values.update(overrides)
    return ReceiptClaims(**values)


def test_canonical_json_sorts_keys_and_has_no_whitespace():
    assert canonical_json({"b": [1, {"d": 1, "c": "é"}], "a": None}) == (
        '{"a":null,"b":[1,{"c":"é","d":1}]}'.encode()
    )


def test_same_facts_sign_the_same_bytes_whatever_the_dict_order():
    first = claims(extra={"x": 1, "y": {"b": 2, "a": 1}})
    second = claims(extra={"y": {"a": 1, "b": 2}, "x": 1})
    assert first.to_bytes() == second.to_bytes()
    assert json.loads(first.to_bytes())["issued_at"] == "2026-10-09T14:19:34.903Z"
    assert json.loads(first.to_bytes())["iat"] == int(MOMENT.timestamp())


def test_payload_signs_the_fields_the_seeds_list():
    payload = json.loads(claims().to_bytes())
    assert set(payload) == {
        "v", "iss", "iat", "issued_at", "route", "request_id", "client_request_id", "tier",
        "pages", "results", "extra",
    }  # fmt: skip
    assert set(payload["pages"][0]) == {
        "url", "final_url", "http_status", "content_kind", "content_sha256",
        "normalised_sha256", "evidence", "doi", "doi_status", "retracted",
    }  # fmt: skip
    assert set(payload["results"][0]) == {
        "page", "quote_sha256", "mode", "match", "score", "start", "end",
        "pdf_page", "pdf_page_end", "scorer", "passages",
    }  # fmt: skip
    passages = payload["results"][1]["passages"]
    assert passages[1] == {"start": 17, "end": 40, "score": 0.217, "pdf_page": 2, "pdf_page_end": 3}
    assert payload["results"][1]["scorer"] == "lexical-v2"
    assert payload["pages"][0]["doi_status"] == "found"
    assert payload["pages"][0]["retracted"] is False


def test_not_a_number_score_is_refused_rather_than_signed_ambiguously():
    result = ResultClaims(0, quote_sha256("q"), "fuzzy", "fuzzy", math.nan, 0, 1)
    with pytest.raises(ValueError):
        claims(results=[result]).to_bytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda: ResultClaims(0, "not-a-digest", "fuzzy", "none", None, None, None),
        lambda: ResultClaims(0, QUOTE, "fuzzy", "none", None, None, None),
        lambda: ResultClaims(0, quote_sha256("q"), "fuzzy", "exact", 1.0, 5, 2),
        lambda: ResultClaims(0, quote_sha256("q"), "fuzzy", "exact", 1.0, 5, None),
        lambda: ResultClaims(-1, quote_sha256("q"), "fuzzy", "none", None, None, None),
        lambda: PageClaims("u", "u", 200, "real", "ABC", None, {}),
    ],
)
def test_malformed_claims_are_refused_when_built(make):
    with pytest.raises(ValueError):
        make()


def test_evidence_or_extra_that_json_cannot_carry_is_refused_when_built():
    with pytest.raises(ValueError, match="evidence"):
        PageClaims("u", "u", 200, "real", None, None, {"retrieved_at": MOMENT})
    with pytest.raises(ValueError, match="extra"):
        claims(extra={"ratio": math.inf})


def test_result_pointing_past_the_pages_is_refused():
    result = ResultClaims(2, quote_sha256("q"), "fuzzy", "none", None, None, None)
    with pytest.raises(ValueError):
        claims(results=[result])


def test_issued_at_must_carry_a_time_zone():
    with pytest.raises(ValueError):
        claims(issued_at=datetime(2026, 1, 1)).to_bytes()


def test_quote_sha256_is_over_the_utf8_bytes_as_sent():
    assert quote_sha256("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_strict_base64url_refuses_a_second_spelling_of_the_same_bytes():
    encoded = b64url_encode(b"\x00\x01")  # "AAE": the last character has spare bits
    assert b64url_decode_strict(encoded) == b"\x00\x01"
    other = encoded[:-1] + "F"
    assert base64.urlsafe_b64decode(other + "=") == b"\x00\x01"  # a lenient decoder agrees
    with pytest.raises(ValueError):
        b64url_decode_strict(other)
    for bad in ("A", "AA=", "A+B/", "AA AA"):
        with pytest.raises(ValueError):
            b64url_decode_strict(bad)


@pytest.mark.django_db  # issuing a receipt logs it
def test_no_issued_receipt_payload_contains_the_quote(key_dir):
    token = issue_sample(QUOTE)
    raw_payload = base64.urlsafe_b64decode(token.split(".")[1] + "==")
    assert QUOTE.encode() not in raw_payload
    assert QUOTE.lower().encode() not in raw_payload.lower()
    assert "illustrative" not in raw_payload.decode()
    assert decode_part(token, 1)["results"][0]["quote_sha256"] == quote_sha256(QUOTE)


# Real quotes are phrases: requiring an inner space keeps hypothesis from "finding" a quote
# that is merely a field name such as "normalised_s" (the sample payload has no spaces).
words = st.text(alphabet=st.characters(categories=("L", "N", "P")), min_size=2, max_size=20)
quotes = st.lists(words, min_size=2, max_size=12).map(" ".join)


@pytest.mark.django_db
@settings(max_examples=60, deadline=None)
@given(quote=quotes)
def test_no_receipt_payload_contains_any_quote_text(quote, tmp_path_factory):
    from django.test import override_settings

    from receipts.keyring import ensure_key

    directory = tmp_path_factory.mktemp("keys")
    ensure_key(str(directory), now=MOMENT)
    with override_settings(ATTEST_SIGNING_KEYS=str(directory)):
        token = issue_sample(quote)
    raw = base64.urlsafe_b64decode(token.split(".")[1] + "==").decode()
    escaped = json.dumps(quote, ensure_ascii=False)[1:-1]
    assert quote not in raw
    assert escaped not in raw
