"""HTTP views for verify/quote, fetch and the free samples: parse, call one service, render."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.renderers import StaticHTMLRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from attest.errors import InvalidRequest
from attest.logs import current_request_id
from attest.schema import route_error_responses
from billing.decorators import PricedCallContext, priced
from billing.openapi import PAYMENT_PARAMETERS
from billing.unpaid import unpaid_limited
from verification.api import route_errors
from verification.api.serializers import (
    FetchInput,
    FetchOutput,
    VerifyCitationsOutput,
    VerifyQuoteInput,
    VerifyQuoteOutput,
)
from verification.pipeline import samples, services
from verification.pipeline.records import PAID_ANSWERS
from verification.pipeline.steps import MODES


def check_quote_request(request: Request) -> dict:
    """verify/quote's body, checked before anything else (no outbound work)."""
    serializer = VerifyQuoteInput(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def check_fetch_request(request: Request) -> dict:
    """fetch's body, checked before anything else (no outbound work)."""
    serializer = FetchInput(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _url_admitter(route: str):
    def admit(request: Request, data: dict, *, paid: bool) -> dict:
        """The URL's host and robots.txt: before the offer, or once the payment is held."""
        target = services.url_admit(url=data["url"], route=route, request_id=current_request_id())
        return {**data, "target": target}

    return admit


@priced(
    "verify/quote",
    precheck=check_quote_request,
    admit=_url_admitter(services.ROUTE_QUOTE),
    recorder=PAID_ANSWERS,
    output=VerifyQuoteOutput,
    bounds=services.SINGLE_CALL_BOUNDS,
)
class VerifyQuoteView(APIView):
    """POST /v1/verify/quote: is this quote on that page? US$0.01 over x402, or a trial call."""

    route = services.ROUTE_QUOTE

    @extend_schema(
        summary="Verify a quote against a page",
        description=(
            "Fetches the page, classifies it, normalises its text and reports whether the quote "
            "is on it (exact, fuzzy or none) with offsets into the normalised text, or with "
            '"match": "passages" the passages that best share a claim\'s words. Every answer '
            "carries a signed receipt. Read page.content_kind before relying on result.match."
        ),
        request=VerifyQuoteInput,
        parameters=PAYMENT_PARAMETERS,
        responses={
            200: VerifyQuoteOutput,
            **route_error_responses(route_errors.VERIFY_QUOTE),
        },
        examples=[
            OpenApiExample(
                "fuzzy",
                request_only=True,
                value={
                    "url": "https://www.iana.org/help/example-domains",
                    "quote": "These domains may be used as illustrative examples",
                    "match": "fuzzy",
                    "case_sensitive": False,
                    "threshold": 0.9,
                },
            )
        ],
        tags=["verification"],
    )
    def post(self, request: Request, *, call: PricedCallContext) -> Response:
        data = call.prechecked  # validated and admitted
        answer = services.quote_verify(
            target=data["target"],
            quote=data["quote"],
            mode=data["match"],
            case_sensitive=data["case_sensitive"],
            threshold=data["threshold"],
            request_id=current_request_id(),
            tier=call.tier,
        )
        return Response(answer)  # rendered once, with its payment fields, by @priced


@priced(
    "fetch",
    precheck=check_fetch_request,
    admit=_url_admitter(services.ROUTE_FETCH),
    recorder=PAID_ANSWERS,
    bounds=services.SINGLE_CALL_BOUNDS,
)
class FetchView(APIView):
    """POST /v1/fetch: one page's verdict and normalised text, signed. US$0.01, or a trial call."""

    route = services.ROUTE_FETCH

    @extend_schema(
        summary="Fetch a page's normalised text",
        description=(
            "Fetches and classifies the page as verify/quote does and returns its normalised "
            "text. The receipt signs normalised_sha256, so the text (and any offsets into it) "
            "can be checked against the receipt alone. A PDF adds pdf_pages, the code-point span "
            "of each page in text. Results about the page (404s, bot walls, timeouts) are charged."
        ),
        request=FetchInput,
        parameters=PAYMENT_PARAMETERS,
        responses={
            200: FetchOutput,
            **route_error_responses(route_errors.FETCH),
        },
        examples=[
            OpenApiExample(
                "one page",
                request_only=True,
                value={"url": "https://www.iana.org/help/example-domains"},
            )
        ],
        tags=["verification"],
    )
    def post(self, request: Request, *, call: PricedCallContext) -> Response:
        answer = services.page_text_fetch(
            target=call.prechecked["target"], request_id=current_request_id(), tier=call.tier
        )
        return Response(FetchOutput.render(answer))


@unpaid_limited
class SamplePageView(APIView):
    """GET /v1/sample/page: our own demo page, which the free samples check."""

    renderer_classes = [StaticHTMLRenderer]
    page_name = "demo"
    status_code = 200

    @extend_schema(
        summary="The demo page",
        description="A made-up report the free samples verify quotes against (HTML).",
        responses={(200, "text/html"): OpenApiTypes.STR},
        tags=["samples"],
    )
    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(
            samples.sample_page_bytes(self.page_name),
            status=self.status_code,
            content_type="text/html; charset=utf-8",
        )


class SampleMissingPageView(SamplePageView):
    """GET /v1/sample/missing: a demo 404 page."""

    page_name = "missing"
    status_code = 404

    @extend_schema(
        summary="A demo 404 page",
        description="What a missing page looks like; /v1/sample/quote?page=missing checks it.",
        responses={(404, "text/html"): OpenApiTypes.STR},
        tags=["samples"],
    )
    def get(self, request: Request) -> HttpResponse:
        return super().get(request)


@unpaid_limited
class SampleQuoteView(APIView):
    """GET /v1/sample/quote: the real pipeline on the demo page, free."""

    @extend_schema(
        summary="Free sample of verify/quote",
        description=(
            "Runs the whole verify/quote pipeline (verdict, text, matching, receipt) on the demo "
            "page's own bytes, in process and without a network fetch. ?match=passages checks a "
            "paraphrased claim; ?page=missing checks the demo 404 page."
        ),
        parameters=[
            OpenApiParameter("match", str, enum=list(MODES), default="fuzzy"),
            OpenApiParameter("page", str, enum=list(samples.SAMPLE_PAGES), default="demo"),
        ],
        responses={200: VerifyQuoteOutput, **route_error_responses(route_errors.SAMPLE_QUOTE)},
        tags=["samples"],
    )
    def get(self, request: Request) -> Response:
        for name in request.query_params:
            if name not in ("match", "page"):
                raise InvalidRequest(
                    f"{name}: unknown parameter; the parameters are match, page.", field=name
                )
        mode = request.query_params.get("match", "fuzzy")
        page_name = request.query_params.get("page", "demo")
        if mode not in MODES:
            raise InvalidRequest("match must be fuzzy, exact or passages.", field="match")
        if page_name not in samples.SAMPLE_PAGES:
            raise InvalidRequest("page must be demo or missing.", field="page")
        request_id = current_request_id()
        answer = samples.sample_quote(mode=mode, page_name=page_name, request_id=request_id)
        return Response(VerifyQuoteOutput.render(answer))


@unpaid_limited
class SampleCitationsView(APIView):
    """GET /v1/sample/citations: the verify/citations pipeline on both demo pages, free."""

    @extend_schema(
        summary="Free sample of verify/citations",
        description=(
            "Runs the whole verify/citations pipeline on three citations of the demo page and "
            "the demo 404 page, in process and without a network fetch: a fuzzy match, a quote "
            "the page does not hold, and a 404 page result."
        ),
        responses={200: VerifyCitationsOutput},
        tags=["samples"],
    )
    def get(self, request: Request) -> Response:
        answer = samples.sample_citations(request_id=current_request_id())
        return Response(VerifyCitationsOutput.render(answer))
