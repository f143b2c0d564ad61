"""The free samples run the real pipeline on the demo page, with no network fetch."""

from __future__ import annotations

import hashlib

import pytest

from attest_core.normalise import normalise
from receipts.services import verify_receipt
from verification.engine.classify import ADVICE
from verification.engine.html_text import html_text
from verification.models import Verification
from verification.pipeline.samples import SAMPLE_QUOTES, sample_page_bytes

pytestmark = pytest.mark.django_db


def test_the_demo_page_is_served_as_html(api):
    response = api.get("/v1/sample/page")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert response.content == sample_page_bytes()
    assert b"nitrate levels dropped 18 %" in response.content


def test_the_demo_404_page_answers_404(api):
    response = api.get("/v1/sample/missing")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"Page not found" in response.content


def test_the_quote_sample_finds_a_fuzzy_match_on_the_demo_page(api, settings):
    settings.ATTEST_PUBLIC_URL = "https://attest.example"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "attest.example"]
    response = api.get("/v1/sample/quote", HTTP_HOST="attest.example")
    assert response.status_code == 200
    body = response.json()
    assert body["page"]["requested_url"] == "https://attest.example/v1/sample/page"
    assert body["page"]["content_kind"] == "real"
    assert body["page"]["title"] == "Harbour water report 2025 (Attest demo page)"
    assert body["page"]["content_sha256"] == hashlib.sha256(sample_page_bytes()).hexdigest()
    result = body["result"]
    assert result["match"] == "fuzzy"
    assert 0.9 <= result["score"] < 1
    text = normalise(html_text(sample_page_bytes().decode()).text).text
    assert "nitrate levels dropped 18 %" in text[result["start"] : result["end"]]
    assert body["advice"] == ADVICE["real"]
    assert body["receipt"].count(".") == 2
    assert body["tier"] == "sample"


def test_the_exact_sample_is_exact(api):
    result = api.get("/v1/sample/quote?match=exact").json()["result"]
    assert result["match"] == "exact"
    assert result["occurrences"] == 1


def test_the_passages_sample_shows_ranked_passages_and_flags(api):
    result = api.get("/v1/sample/quote?match=passages").json()["result"]
    assert result["match"] == "passages"
    assert result["scorer"] == "lexical-v2"
    assert len(result["passages"]) == 3
    assert "nitrate" in result["passages"][0]["text"]
    flags = {flag for p in result["passages"] for flag in p["flags"]}
    assert "number_mismatch" in flags or "negation_mismatch" in flags


def test_the_missing_page_sample_is_an_http_error(api):
    body = api.get("/v1/sample/quote?page=missing").json()
    assert body["page"]["http_status"] == 404
    assert body["page"]["content_kind"] == "http_error"
    assert body["result"]["match"] == "none"


def test_an_unknown_sample_mode_is_400(api):
    response = api.get("/v1/sample/quote?match=regex")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "match"


def test_samples_are_recorded_as_sample_calls(api):
    api.get("/v1/sample/quote")
    record = Verification.objects.get()
    assert (record.route, record.tier, record.outcome) == ("sample/quote", "sample", "answered")
    assert SAMPLE_QUOTES["fuzzy"] not in record.requested_url


@pytest.mark.parametrize(
    ("page", "path"), [("demo", "/v1/sample/page"), ("missing", "/v1/sample/missing")]
)
def test_a_sample_names_the_demo_page_under_the_one_public_url(api, settings, page, path):
    # One base URL everywhere: the page a sample signs is under ATTEST_PUBLIC_URL, as the
    # receipt's iss and every offer's resource are, whichever host the request named.
    settings.ATTEST_PUBLIC_URL = "https://attest.example"
    response = api.get(f"/v1/sample/quote?page={page}", HTTP_HOST="localhost:8123")
    body = response.json()
    assert body["page"]["requested_url"] == f"https://attest.example{path}"
    assert body["page"]["final_url"] == f"https://attest.example{path}"
    claims = verify_receipt(receipt=body["receipt"]).claims
    assert claims["pages"][0]["url"] == f"https://attest.example{path}"
    assert claims["iss"] == "https://attest.example"
