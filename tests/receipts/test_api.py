"""The JWKS route, POST /v1/receipt/verify (never a 500) and the read-only admin page."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from receipts import selectors, services
from tests.receipts.samples import PAGE_TEXT, QUOTE, issue_sample

# /v1/receipt/verify counts against the unpaid limit, which lives in the database when the
# cache is not Redis (so every process shares it).
pytestmark = pytest.mark.django_db

VERIFY = "/v1/receipt/verify"


def test_jwks_lists_public_keys_only_and_is_cacheable(key_dir, api):
    services.signing_key_rotate()
    response = api.get("/.well-known/jwks.json")
    assert response.status_code == 200
    assert "public" in response["Cache-Control"] and "max-age=" in response["Cache-Control"]
    keys = response.json()["keys"]
    assert len(keys) == 2
    for key in keys:
        assert {"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA"}.items() <= key.items()
        assert set(key) == {"kty", "crv", "x", "kid", "use", "alg"}
    assert keys[0]["kid"] == selectors.signing_keyring().active.kid


def test_verify_returns_the_claims_of_a_good_receipt(key_dir, api):
    token = issue_sample()
    response = api.post(VERIFY, {"receipt": token}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is True
    assert body["kid"] == selectors.signing_keyring().active.kid
    assert body["issued_at"] == body["claims"]["issued_at"]
    assert body["claims"]["request_id"] == "req-1"
    assert body["key_state"] == "active"
    assert "checks" not in body


def test_verify_refuses_an_altered_receipt_with_a_reason(key_dir, api):
    token = issue_sample()
    head, body, signature = token.split(".")
    altered = f"{head}.{body[:-2]}{'Q' if body[-2] != 'Q' else 'R'}{body[-1]}.{signature}"
    response = api.post(VERIFY, {"receipt": altered}, format="json")
    assert response.status_code == 200
    assert response.json()["valid"] is False
    assert response.json()["reason"] in {"bad_signature", "malformed"}
    assert response.json()["message"]


@pytest.mark.parametrize(
    "payload",
    [{}, {"receipt": 123}, {"receipt": None}, {"receipt": ["a.b.c"]}, {"receipt": {"a": 1}}],
)
def test_missing_or_non_string_receipt_is_an_invalid_request(payload, api):
    response = api.post(VERIFY, payload, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["details"]["field"] == "receipt"


# A lone surrogate ("\\ud800") is no text at all: refused with 400 like on every route
# (tests/attest/test_request_text.py).
@pytest.mark.parametrize("receipt", ["", "\\u0000", "a.b.c\\u0000", "..", "a" * 300_000])
def test_odd_strings_are_judged_invalid_not_refused(receipt, api):
    body = '{"receipt": "' + receipt + '"}'
    response = api.post(VERIFY, body, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["valid"] is False
    assert response.json()["reason"] in {"malformed", "too_large"}


def test_a_header_kid_with_a_lone_surrogate_is_not_echoed(key_dir, api):
    from attest_core.canonical import b64url_encode

    header = b64url_encode(b'{"alg":"EdDSA","typ":"attest-receipt+jwt","kid":"\\ud800"}')
    receipt = f"{header}.{b64url_encode(b'{}')}.{b64url_encode(bytes(64))}"
    response = api.post(VERIFY, {"receipt": receipt}, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "valid": False,
        "kid": None,
        "reason": "missing_kid",
        "message": services.REASONS["missing_kid"],
    }


def test_a_body_that_is_not_an_object_or_json_is_refused_with_the_envelope(api):
    listed = api.post(VERIFY, ["a.b.c"], format="json")
    assert listed.status_code == 400 and listed.json()["error"]["code"] == "invalid_request"
    broken = api.post(VERIFY, "{not json", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_json"


@pytest.mark.parametrize("opening", ["[", '{"receipt": '], ids=["list", "object"])
def test_a_body_nested_too_deeply_is_invalid_json_not_a_server_error(api, opening):
    api.raise_request_exception = False
    nested = api.post(VERIFY, opening * 50_000, content_type="application/json")
    assert nested.status_code == 400
    assert nested.json()["error"]["code"] == "invalid_json"


def test_checks_compare_the_signed_hash_offsets_and_quote(key_dir, api):
    token = issue_sample()
    body = api.post(
        VERIFY, {"receipt": token, "text": PAGE_TEXT, "quote": QUOTE}, format="json"
    ).json()
    checks = body["checks"]
    assert checks["page"] == 0 and checks["page_in_receipt"] is True
    assert checks["normalised_sha256"] is True
    assert checks["results"][0] == {"result": 0, "offsets_in_text": True, "span": QUOTE}
    assert [entry["result"] for entry in checks["results"]] == [0, 1]
    assert checks["quote_sha256"] is True
    assert checks["quote_results"] == [0, 2]

    other = api.post(
        VERIFY,
        {"receipt": token, "text": PAGE_TEXT[:-1], "quote": QUOTE.upper()},
        format="json",
    ).json()["checks"]
    assert other["normalised_sha256"] is False
    assert other["quote_sha256"] is False and other["quote_results"] == []


def test_checks_on_a_page_the_receipt_does_not_have(key_dir, api):
    token = issue_sample()
    checks = api.post(VERIFY, {"receipt": token, "text": "x", "page": 7}, format="json").json()[
        "checks"
    ]
    assert checks == {
        "page": 7,
        "page_in_receipt": False,
        "normalised_sha256": False,
        "results": [],
    }
    error = api.post(VERIFY, {"receipt": token, "page": -1}, format="json")
    assert error.status_code == 400 and error.json()["error"]["details"]["field"] == "page"


def test_the_sample_page_hash_is_what_checks_compare():
    # Guards the sample itself: the signed normalised_sha256 is the hash of PAGE_TEXT.
    from tests.receipts.samples import sample_pages

    assert sample_pages()[0].normalised_sha256 == hashlib.sha256(PAGE_TEXT.encode()).hexdigest()


def _mutations(token: str):
    return st.one_of(
        st.integers(0, len(token) - 1).flatmap(
            lambda i: st.text(max_size=3).map(lambda s: token[:i] + s + token[i + 1 :])
        ),
        st.integers(0, len(token)).map(lambda i: token[:i]),
        st.lists(st.sampled_from(token.split(".")), min_size=1, max_size=4).map(".".join),
    )


garbage = st.one_of(
    st.text(max_size=400),
    st.from_regex(r"[A-Za-z0-9_-]{0,60}\.[A-Za-z0-9_-]{0,60}\.[A-Za-z0-9_=+/-]{0,90}"),
    st.binary(max_size=120).map(lambda b: b.decode("latin-1")),
    st.text(alphabet=st.characters(categories=("Cs", "Cc", "Co", "L")), max_size=100),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(receipt=garbage, text=st.none() | st.text(max_size=50), page=st.integers(0, 3))
def test_verify_never_answers_500_on_garbage(receipt, text, page):
    client = APIClient()
    payload = {"receipt": receipt, "page": page}
    if text is not None:
        payload["text"] = text
    # json.dumps escapes lone surrogates, as a real client's JSON would carry them.
    response = client.post(VERIFY, json.dumps(payload), content_type="application/json")
    assert response.status_code in {200, 400}
    body = response.json()
    if response.status_code == 200:
        assert body["valid"] is False and body["reason"]
    else:
        assert body["error"]["code"] == "invalid_request"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_verify_never_answers_500_on_a_mutated_receipt(data):
    token = issue_sample()
    receipt = data.draw(_mutations(token))
    response = APIClient().post(VERIFY, {"receipt": receipt, "text": "t"}, format="json")
    assert response.status_code == 200
    assert response.json()["valid"] is (receipt == token)


def test_openapi_schema_lists_both_routes(api):
    paths = api.get("/v1/openapi.json").json()["paths"]
    assert set(paths["/v1/receipt/verify"]["post"]["responses"]) >= {"200", "400"}
    assert "200" in paths["/.well-known/jwks.json"]["get"]["responses"]


@pytest.mark.django_db
def test_admin_lists_keys_with_state_and_no_private_material(key_dir, admin_client):
    services.signing_key_rotate()
    ring = selectors.signing_keyring()
    page = admin_client.get("/admin/receipts/signingkey/")
    assert page.status_code == 200
    html = page.content.decode()
    for entry in ring.entries:
        assert entry.kid in html
        private = entry.private.as_dict(private=True)["d"] if entry.private else None
        if private:
            assert private not in html
    assert "retired" in html and "active" in html
    assert "PRIVATE KEY" not in html
    assert admin_client.get("/admin/receipts/signingkey/add/").status_code == 404
    assert "/admin/receipts/signingkey/" in admin_client.get("/admin/").content.decode()


@pytest.mark.django_db
def test_admin_key_page_needs_the_view_permission(client, django_user_model):
    user = django_user_model.objects.create_user("clerk", password="pw", is_staff=True)
    client.force_login(user)
    assert client.get("/admin/receipts/signingkey/").status_code == 403
