"""Every verification answer is rendered by its output serializer, unchanged byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework import serializers

from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page
from tests.verification.pdfs import text_pdf
from verification.api.serializers import (
    AnswerDrift,
    AnswerOutput,
    FetchOutput,
    ResultOutput,
    VerifyCitationsOutput,
    VerifyQuoteOutput,
    VerifyQuotesOutput,
)
from verification.network.fetch import check_url
from verification.pipeline import batches, samples, services
from verification.pipeline.steps import MatchOptions

pytestmark = pytest.mark.django_db

ARTICLE = (
    "<html><head><title>Minutes</title></head><body><p>The board approved the budget.</p>"
    "<p>Members asked for a full audit of the harbour accounts.</p></body></html>"
)


def _order_differences(field: Any, value: Any, path: str, found: list[str]) -> None:
    """Check one answer against its serializer, recursively; note where its keys are not in
    the declared order (the schema's property order)."""
    if isinstance(field, serializers.ListSerializer):
        for i, item in enumerate(value):
            _order_differences(field.child, item, f"{path}[{i}]", found)
        return
    if isinstance(field, serializers.ListField):
        if value is not None:
            for i, item in enumerate(value):
                _order_differences(field.child, item, f"{path}[{i}]", found)
        return
    if not isinstance(field, serializers.Serializer):
        return
    assert isinstance(value, dict), path
    declared = list(field.fields)
    assert set(value) <= set(declared), (path, set(value) - set(declared))
    required = {name for name, f in field.fields.items() if f.required}
    assert required <= set(value), (path, required - set(value))
    answer_order = list(value)
    schema_order = [name for name in declared if name in value]
    if answer_order != schema_order:
        found.append(f"{path} ({type(field).__name__}): {answer_order} != {schema_order}")
    for name, item in value.items():
        if item is None:
            assert field.fields[name].allow_null, f"{path}.{name} is null"
        else:
            _order_differences(field.fields[name], item, f"{path}.{name}", found)


def _holds_to(output: type[serializers.Serializer], body: dict[str, Any]) -> None:
    """The answer has only declared keys, every required one, and lists them in the schema's
    order: the serializers declare the answers' published order (a passages result's
    passages, scorer and note before the page hash; a citation's page fields first; the
    receipt, tier and payment fields last, a PDF fetch's page spans after the tier)."""
    found: list[str] = []
    _order_differences(output(), body, "$", found)
    assert not found, found


def _same_bytes(output: type[AnswerOutput], answer: dict[str, Any]) -> None:
    assert json.dumps(output(answer).data) == json.dumps(answer)
    # The views render through the class's kept instance: the same bytes.
    assert json.dumps(output.render(answer)) == json.dumps(answer)


# --- the renderer ------------------------------------------------------------------------


def test_an_undeclared_key_is_refused_not_dropped():
    answer = samples.sample_quote(mode="exact", request_id="r1")
    answer["result"]["surprise"] = 1
    with pytest.raises(AnswerDrift, match="surprise"):
        VerifyQuoteOutput(answer).data  # noqa: B018 (rendering is what is tested)


def test_a_required_key_that_is_absent_is_refused():
    answer = samples.sample_quote(mode="exact", request_id="r1")
    del answer["advice"]
    with pytest.raises(AnswerDrift, match="advice"):
        VerifyQuoteOutput(answer).data  # noqa: B018


def test_the_views_renderer_binds_its_fields_once_and_still_refuses_drift():
    answer = samples.sample_quote(mode="exact", request_id="r1")
    first = VerifyQuoteOutput.render(answer)
    second = VerifyQuoteOutput.render(samples.sample_quote(mode="fuzzy", request_id="r2"))
    assert first.serializer is second.serializer  # one instance: fields not deep-copied again
    assert first == VerifyQuoteOutput(answer).data
    answer["result"]["surprise"] = 1
    with pytest.raises(AnswerDrift, match="surprise"):
        VerifyQuoteOutput.render(answer)


def test_a_null_where_the_schema_allows_none_is_refused():
    answer = samples.sample_quote(mode="exact", request_id="r1")
    answer["result"]["occurrences"] = None
    with pytest.raises(AnswerDrift, match="occurrences"):
        ResultOutput(answer["result"]).data  # noqa: B018


def test_an_answer_is_rendered_in_the_schema_s_order_whatever_order_it_was_built_in():
    answer = samples.sample_quote(mode="passages", request_id="r1")
    shuffled = dict(reversed(list(answer.items())))
    shuffled["result"] = dict(reversed(list(answer["result"].items())))
    rendered = VerifyQuoteOutput(shuffled).data
    assert list(rendered) == [name for name in VerifyQuoteOutput().fields if name in answer]
    assert list(rendered["result"]) == [
        name for name in ResultOutput().fields if name in answer["result"]
    ]
    assert json.dumps(rendered) == json.dumps(answer)


@pytest.mark.parametrize("mode", ["exact", "fuzzy", "passages"])
@pytest.mark.parametrize("page_name", ["demo", "missing"])
def test_sample_quote_renders_to_the_same_bytes(mode, page_name):
    answer = samples.sample_quote(mode=mode, page_name=page_name, request_id="r1")
    _same_bytes(VerifyQuoteOutput, answer)
    _holds_to(VerifyQuoteOutput, answer)


def test_sample_citations_renders_to_the_same_bytes():
    answer = samples.sample_citations(request_id="r1")
    _same_bytes(VerifyCitationsOutput, answer)
    _holds_to(VerifyCitationsOutput, answer)


# --- every route's answer, as sent ---------------------------------------------------------


@pytest.fixture
def site(pages):
    pages.routes["/minutes"] = page(ARTICLE)
    pages.routes["/report.pdf"] = page(
        text_pdf([["The board approved the budget."], ["Members asked for a full audit."]]),
        content_type="application/pdf",
    )
    return pages


def _tier_fields(body: dict, tier: str) -> None:
    """Every priced answer names its tier; a trial one counts the calls left, a paid one
    its rail (each declared by its serializer, which _holds_to checks)."""
    assert body["tier"] == tier
    assert ("trial_calls_left" in body) == (tier == "trial")
    assert ("rail" in body) == (tier == "paid")
    if tier == "trial":
        assert isinstance(body["trial_calls_left"], int)


def _paid(api, route: str, body: dict) -> dict:
    response = api.post(f"/v1/{route}", body, format="json")
    if response.status_code == 402:
        payment = Payer().pay(decode_offer(response))
        response = api.post(f"/v1/{route}", body, format="json", HTTP_PAYMENT_SIGNATURE=payment)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("tier", ["trial", "paid"])
def test_every_route_answers_what_its_serializer_declares(api, site, settings, tier):
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1000 if tier == "trial" else 0
    html, pdf = site.url("/minutes"), site.url("/report.pdf")
    for url in (html, pdf):
        for mode in ("exact", "fuzzy", "passages"):
            options = {"match": mode}
            quote = "board approved the budget"
            body = _paid(api, "verify/quote", {"url": url, "quote": quote, **options})
            _tier_fields(body, tier)
            _holds_to(VerifyQuoteOutput, body)
            body = _paid(api, "verify/quotes", {"url": url, "quotes": [quote, "absent"], **options})
            _tier_fields(body, tier)
            _holds_to(VerifyQuotesOutput, body)
            citations = [{"url": html, "quote": quote}, {"url": pdf, "quote": "full audit"}]
            body = _paid(api, "verify/citations", {"citations": citations, **options})
            _tier_fields(body, tier)
            _holds_to(VerifyCitationsOutput, body)
        body = _paid(api, "fetch", {"url": url})
        assert ("pdf_pages" in body) == (url == pdf)
        _tier_fields(body, tier)
        _holds_to(FetchOutput, body)


@pytest.mark.parametrize("path", ["/minutes", "/report.pdf"])
@pytest.mark.parametrize("mode", ["exact", "fuzzy", "passages"])
def test_each_service_answer_renders_to_the_same_bytes(site, path, mode):
    url = site.url(path)
    options = MatchOptions(mode=mode)
    quote = services.quote_verify(
        target=check_url(url), quote="approved the budget", mode=mode, request_id="r1", tier="paid"
    )
    _same_bytes(VerifyQuoteOutput, quote)
    _same_bytes(
        FetchOutput, services.page_text_fetch(target=check_url(url), request_id="r1", tier="paid")
    )
    for route, output, answer in (
        (batches.ROUTE_QUOTES, VerifyQuotesOutput, batches.quotes_answer),
        (batches.ROUTE_CITATIONS, VerifyCitationsOutput, batches.citations_answer),
    ):
        batch = batches.batch_admit(
            route=route,
            urls=[url, url],
            raw_quotes=["approved the budget", "absent"],
            options=options,
            quote_field=str,
            url_field=str,
            client_ip="127.0.0.1",
            request_id="r1",
        )
        run = batches.batch_run(batch=batch, request_id="r1", tier="paid")
        _same_bytes(output, answer(run, batch, tier="paid"))
