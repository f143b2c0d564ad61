"""``@priced(route)``: the one thing a DRF view declares to be paid per call.

Usage::

    @priced("verify/quote")
    class VerifyQuoteView(APIView):
        def precheck(self, request):          # optional: runs before payment
            serializer = InputSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            return serializer.validated_data   # -> request.prechecked

        def trial_size(self, request) -> int:  # optional: e.g. the number of citations
            return len(request.prechecked["citations"])

        def post(self, request):
            ...  # request.tier is "trial" or "paid"; request.payment the verified payment
            return Response(body)              # charged; set response.charged = False if not

An ``AttestError`` raised by ``precheck`` or the handler is never charged and frees the
payment or the trial call; a normal 2xx answer is charged: it is settled before it leaves,
and gains ``tier``, ``rail`` and ``network`` plus the ``PAYMENT-RESPONSE`` header.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from attest.errors import AttestError
from billing import charging
from billing.client_ip import client_ip
from billing.exceptions import EXPOSED_HEADERS
from billing.pricing import priced_route
from billing.services import admit_call, release_call, settle_call

_HANDLERS = ("get", "post", "put", "patch", "delete")


def _priced_handler(route_name: str, handler: Callable[..., Response]) -> Callable[..., Response]:
    route = priced_route(route_name)

    @functools.wraps(handler)
    def priced_handler(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        precheck = getattr(view, "precheck", None)
        request.prechecked = precheck(request, *args, **kwargs) if precheck else None
        size = view.trial_size(request) if hasattr(view, "trial_size") else 1
        call = admit_call(
            route=route,
            headers=request.headers,
            client_ip=client_ip(request),
            request_id=getattr(request, "request_id", ""),
            trial_size=size,
        )
        request.tier = call.tier
        request.payment = call.payment
        try:
            response = handler(view, request, *args, **kwargs)
        except AttestError as exc:
            release_call(call=call, outcome=exc.code)
            raise
        except BaseException:
            release_call(call=call, outcome="server_error")
            raise
        charged = charging.response_is_charged(
            status=response.status_code, charged=getattr(response, "charged", None)
        )
        if not charged:
            release_call(call=call, outcome=f"uncharged_{response.status_code}")
            return response
        # Any failure here raises before the body leaves: the answer is held until settled.
        headers = settle_call(call=call)
        if isinstance(response.data, dict):
            response.data = {**response.data, **call.response_fields}
        for name, value in headers.items():
            response[name] = value
        return response

    priced_handler.priced_route = route  # type: ignore[attr-defined]
    return priced_handler


def priced(route_name: str) -> Callable[[Any], Any]:
    """Declare a view class (or one handler method) as priced under ``route_name``."""
    priced_route(route_name)  # an unknown route fails at import, not on the first call

    def decorate(target: Any) -> Any:
        if not inspect.isclass(target):
            return _priced_handler(route_name, target)
        for name in _HANDLERS:
            handler = target.__dict__.get(name)
            if handler is not None:
                setattr(target, name, _priced_handler(route_name, handler))
        original_finalize = target.finalize_response

        def finalize_response(self, request, response, *args, **kwargs):
            response = original_finalize(self, request, response, *args, **kwargs)
            response.setdefault("Access-Control-Expose-Headers", EXPOSED_HEADERS)
            return response

        target.finalize_response = finalize_response
        target.priced_route = priced_route(route_name)
        return target

    return decorate
