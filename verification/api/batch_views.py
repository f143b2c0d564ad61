"""HTTP views for verify/citations and verify/quotes: parse, call one service, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from attest.logs import current_request_id
from attest.schema import route_error_responses
from billing.client_ip import client_ip
from billing.decorators import PricedCallContext, priced
from billing.openapi import PAYMENT_PARAMETERS
from billing.pricing import priced_route
from verification.api import route_errors
from verification.api.serializers import (
    VerifyCitationsInput,
    VerifyCitationsOutput,
    VerifyQuotesInput,
    VerifyQuotesOutput,
)
from verification.pipeline import batches, services
from verification.pipeline.batches import MAX_CITATIONS, MAX_QUOTES
from verification.pipeline.records import PAID_ANSWERS
from verification.pipeline.steps import MatchOptions


def _options(data: dict) -> MatchOptions:
    return MatchOptions(data["match"], data["case_sensitive"], data["threshold"])


def check_citations_request(request: Request) -> batches.CheckedBatch:
    """The request, the caller's limits and the match queue: no outbound work yet."""
    serializer = VerifyCitationsInput(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    return batches.batch_check(
        route=batches.ROUTE_CITATIONS,
        urls=[citation["url"] for citation in data["citations"]],
        raw_quotes=[citation["quote"] for citation in data["citations"]],
        options=_options(data),
        quote_field=lambda i: f"citations[{i}].quote",
        url_field=lambda i: f"citations[{i}].url",
        client_ip=client_ip(request),
        request_id=current_request_id(),
    )


def check_quotes_request(request: Request) -> batches.CheckedBatch:
    """The request, the caller's limits and the match queue: no outbound work yet."""
    serializer = VerifyQuotesInput(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    return batches.batch_check(
        route=batches.ROUTE_QUOTES,
        urls=[data["url"]] * len(data["quotes"]),
        raw_quotes=data["quotes"],
        options=_options(data),
        quote_field=lambda i: f"quotes[{i}]",
        url_field=lambda i: "url",
        client_ip=client_ip(request),
        request_id=current_request_id(),
    )


def admit_batch(
    request: Request, checked: batches.CheckedBatch, *, paid: bool
) -> batches.AdmittedBatch:
    """Every URL's host and robots.txt: before the offer, or once the payment is held."""
    return batches.batch_admit_urls(checked, request_id=current_request_id())


def _citation_count(batch: batches.CheckedBatch) -> int:
    return len(batch.items)


@priced(
    "verify/citations",
    precheck=check_citations_request,
    admit=admit_batch,
    trial_size=_citation_count,
    recorder=PAID_ANSWERS,
    bounds=services.BATCH_BOUNDS,
)
class VerifyCitationsView(APIView):
    """POST /v1/verify/citations: 1 to 10 quote/URL pairs in one batch. US$0.10, or a trial."""

    route = batches.ROUTE_CITATIONS

    @extend_schema(
        summary="Verify a batch of citations",
        description=(
            f"Checks 1 to {MAX_CITATIONS} citations (a quote and the URL it is attributed to). "
            "Each distinct URL is fetched once, all at once; every quote is matched against its "
            "page's copy. results has one entry per citation in request order, pages one per "
            "distinct URL, all under one signed receipt. A quote too costly to match gets its own "
            "error while the batch is charged; a dead host is a result. A trial covers at most "
            f"{priced_route('verify/citations').trial_max_size} citations."
        ),
        request=VerifyCitationsInput,
        parameters=PAYMENT_PARAMETERS,
        responses={
            200: VerifyCitationsOutput,
            **route_error_responses(route_errors.VERIFY_CITATIONS),
        },
        examples=[
            OpenApiExample(
                "two citations",
                request_only=True,
                value={
                    "citations": [
                        {
                            "url": "https://www.iana.org/help/example-domains",
                            "quote": "These domains may be used as illustrative examples",
                        },
                        {
                            "url": "https://www.iana.org/domains/reserved",
                            "quote": "IANA-managed Reserved Domains",
                        },
                    ],
                    "match": "fuzzy",
                },
            )
        ],
        tags=["verification"],
    )
    def post(self, request: Request, *, call: PricedCallContext) -> Response:
        batch = call.prechecked
        run = batches.batch_run(batch=batch, request_id=current_request_id(), tier=call.tier)
        return Response(
            VerifyCitationsOutput.render(batches.citations_answer(run, batch, tier=call.tier))
        )


@priced(
    "verify/quotes",
    precheck=check_quotes_request,
    admit=admit_batch,
    recorder=PAID_ANSWERS,
    bounds=services.BATCH_BOUNDS,
)
class VerifyQuotesView(APIView):
    """POST /v1/verify/quotes: 1 to 20 quotes on one page. US$0.08, or a trial call."""

    route = batches.ROUTE_QUOTES

    @extend_schema(
        summary="Verify many quotes on one page",
        description=(
            f"Fetches the page once and matches 1 to {MAX_QUOTES} quotes on it; results has one "
            "entry per quote in request order, each with the fields of verify/quote's result. The "
            "fuzzy searches share twice one verify/quote call's work limit, as a citations batch "
            "does."
        ),
        request=VerifyQuotesInput,
        parameters=PAYMENT_PARAMETERS,
        responses={
            200: VerifyQuotesOutput,
            **route_error_responses(route_errors.VERIFY_QUOTES),
        },
        examples=[
            OpenApiExample(
                "two quotes",
                request_only=True,
                value={
                    "url": "https://www.iana.org/help/example-domains",
                    "quotes": [
                        "These domains may be used as illustrative examples",
                        "without prior coordination",
                    ],
                },
            )
        ],
        tags=["verification"],
    )
    def post(self, request: Request, *, call: PricedCallContext) -> Response:
        batch = call.prechecked
        run = batches.batch_run(batch=batch, request_id=current_request_id(), tier=call.tier)
        return Response(
            VerifyQuotesOutput.render(batches.quotes_answer(run, batch, tier=call.tier))
        )
