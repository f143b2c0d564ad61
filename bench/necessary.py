"""URLs for bench_bookkeeping: the product's, and a view doing only a call's necessary work.

``NecessaryView`` validates verify/quote's body, checks the address, fetches, reads and
matches the page and signs the receipt, with the same functions the route uses, and does
nothing else: no limits, no payment, no records, no log append, no output serializer.
"""

from __future__ import annotations

from django.conf import settings
from django.urls import path
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from attest_core.jws import sign_compact
from attest_core.payloads import ReceiptClaims
from receipts.selectors import signing_keyring
from verification.api.serializers import VerifyQuoteInput
from verification.engine.match import FUZZY_WORK_PER_CALL, WorkBudget
from verification.network.fetch import check_url
from verification.pipeline.steps import (
    MatchOptions,
    fetch_checked,
    match_on_page,
    normalised_quote,
    page_claims,
    read_pages,
    result_claims,
)
from wiring.urls import urlpatterns as product_urls


class NecessaryView(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def post(self, request: Request) -> Response:
        serializer = VerifyQuoteInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        options = MatchOptions(data["match"], data["case_sensitive"], data["threshold"])
        page = read_pages([fetch_checked(check_url(data["url"]))])[0]
        quote = normalised_quote(data["quote"], mode=options.mode)
        result = match_on_page(page, quote, options=options, budget=WorkBudget(FUZZY_WORK_PER_CALL))
        claims = ReceiptClaims(
            issuer=settings.ATTEST_PUBLIC_URL,
            issued_at=timezone.now(),
            route="verify/quote",
            request_id="bench",
            tier="paid",
            pages=[page_claims(page)],
            results=[
                result_claims(result, page_index=0, raw_quote=data["quote"], mode=options.mode)
            ],
            extra={},
            client_request_id=None,
        )
        key = signing_keyring().signing_key()
        receipt = sign_compact(claims.to_bytes(), key=key.signer, kid=key.kid)
        return Response({"result": result, "page": page.as_json(), "receipt": receipt})


urlpatterns = [path("bench/necessary", NecessaryView.as_view()), *product_urls]
