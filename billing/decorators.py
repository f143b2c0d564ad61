"""``@priced(route, ...)``: the one thing a DRF view declares to be paid per call.

Usage::

    def validate(request):                     # optional: runs first, no outbound work
        serializer = InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def admit(request, validated, *, paid):    # optional: the outbound checks (DNS, robots.txt)
        return {**validated, "target": url_admit(validated["url"])}   # -> call.prechecked

    @priced(
        "verify/citations",
        precheck=validate,
        admit=admit,
        trial_size=lambda data: len(data["citations"]),
        output=VerifyCitationsOutput,          # optional: renders the answer with its fields
    )
    class VerifyCitationsView(APIView):
        def post(self, request, *, call: PricedCallContext):
            ...  # call.tier is "trial" or "paid"; call.payment the verified payment or None
            return Response(body)              # charged; set response.charged = False if not

The order is fixed: ``precheck`` (the body; a bad one is 400 whatever the payment header
says), then, for a request without a payment header, ``admit`` and the unpaid admission
(a trial or the 402); for one with a header, the payment is decoded and verified first (a
header that does not decode or a payment that does not verify is refused as an unpaid
request, before ``admit`` does any outbound work) and ``admit`` runs after it. An
``AttestError`` raised by ``precheck``, ``admit`` or the handler is never charged and
frees the payment or the trial call. A normal 2xx answer is charged: a trial answer gains ``tier``
and ``trial_calls_left``; a paid one gains ``tier``, ``rail`` and ``network`` (with
``output``, the answer and what it gains are rendered by that serializer), is rendered
and kept, settled before it leaves, and carries ``PAYMENT-RESPONSE``. The same request sent
again with the same payment gets those same bytes without a second charge. A request
without a payment header counts against the caller's unpaid limit (class form only).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from attest.errors import AttestError
from attest.rendering import rendered
from billing import charging
from billing.client_ip import client_ip
from billing.pricing import priced_route
from billing.recorders import AnswerRecorder, register_recorder
from billing.services import (
    RenderedAnswer,
    VerifiedPayment,
    answer_response,
    call_admit,
    call_record_trial_use,
    call_release,
    call_settle_paid,
    request_digest,
)
from billing.unpaid import apply_unpaid_limit, payment_header

_HANDLERS = ("get", "post", "put", "patch", "delete")

Precheck = Callable[..., Any]
Admit = Callable[..., Any]
TrialSize = Callable[[Any], int]


@dataclass(frozen=True)
class PricedCallContext:
    """What a priced handler is given, as its ``call`` keyword argument."""

    prechecked: Any  # what the precheck returned (None without one)
    tier: str  # "trial" or "paid"
    payment: VerifiedPayment | None  # the verified, claimed payment of a paid call


def _priced_handler(
    route_name: str,
    handler: Callable[..., Response],
    *,
    precheck: Precheck | None,
    admit: Admit | None,
    trial_size: TrialSize | None,
    output: type[Serializer] | None,
) -> Callable[..., HttpResponseBase]:
    route = priced_route(route_name)

    @functools.wraps(handler)
    def priced_handler(
        view: Any, request: Request, *args: Any, **kwargs: Any
    ) -> Response | HttpResponseBase:
        prechecked = precheck(request, *args, **kwargs) if precheck else None
        size = trial_size(prechecked) if trial_size else 1
        # Unpaid: the outbound checks come before the offer, so a refused URL is never paid
        # for. With a payment header they wait until the payment verifies: junk buys nothing.
        paid = bool(payment_header(request.headers))
        if admit is not None and not paid:
            prechecked = admit(request, prechecked, paid=False)
        assert request.method is not None  # the stubs allow None; a routed request has one
        call = call_admit(
            route=route,
            headers=request.headers,
            client_ip=client_ip(request),
            request_id=getattr(request, "request_id", ""),
            request_digest=request_digest(
                method=request.method,
                route=route.name,
                data=request.data,
                query=request.query_params,
            ),
            trial_size=size,
        )
        if call.replay is not None:
            return call.replay  # already paid for and answered: the same bytes again
        try:
            if admit is not None and paid:
                prechecked = admit(request, prechecked, paid=True)
            context = PricedCallContext(prechecked=prechecked, tier=call.tier, payment=call.payment)
            response = handler(view, request, *args, call=context, **kwargs)
        except AttestError as exc:
            call_release(call=call, outcome=exc.code)
            raise
        except BaseException:
            call_release(call=call, outcome="server_error")
            raise
        charged = charging.response_is_charged(
            status=response.status_code, charged=getattr(response, "charged", None)
        )
        if not charged:
            call_release(call=call, outcome=f"uncharged_{response.status_code}")
            return response
        if isinstance(response.data, dict):
            response.data = {**response.data, **call.response_fields}
            if output is not None:
                response.data = rendered(output, response.data)
        if call.payment is None:
            call_record_trial_use(call=call)
            return response
        # Render now: the bytes are kept before settlement so a retry gets exactly them.
        response = view.finalize_response(request, response, *args, **kwargs)
        response.render()
        # Any failure here raises before the body leaves: the answer is held until settled.
        answer = call_settle_paid(call=call, rendered=RenderedAnswer.from_response(response))
        return answer_response(answer, legacy_header=call.payment.legacy_header)

    # The route tags the handler and the view class; no type declares such an attribute.
    priced_handler.priced_route = route  # type: ignore[attr-defined]
    return priced_handler


def priced(
    route_name: str,
    *,
    precheck: Precheck | None = None,
    admit: Admit | None = None,
    trial_size: TrialSize | None = None,
    recorder: AnswerRecorder | None = None,
    output: type[Serializer] | None = None,
) -> Callable[[Any], Any]:
    """Declare a view class (or one handler method) as priced under ``route_name``.

    ``precheck(request, *args, **kwargs)`` runs first: it validates the request without any
    outbound work. ``admit(request, prechecked, paid=...)`` makes the outbound checks (a
    host's address, robots.txt): before the offer for an unpaid request, after the payment
    verifies for a paid one. What the last of them returns reaches the handler as
    ``call.prechecked``. An error either raises is never charged.
    ``trial_size(prechecked)`` says how many trial calls the request is (1 without it),
    e.g. its number of citations; it reads what ``precheck`` returned. ``recorder`` is told
    when a paid answer the view produced is withheld, or delivered later to a retry
    (billing.recorders), so that the view's app can correct its record. ``output`` is the
    serializer a charged 2xx
    answer is rendered by once the fields above are added, so they too are what the schema
    says.
    """
    priced_route(route_name)  # an unknown route fails at import, not on the first call
    if recorder is not None:
        register_recorder(route_name, recorder)

    def decorate(target: Any) -> Any:
        if not inspect.isclass(target):
            return _priced_handler(
                route_name,
                target,
                precheck=precheck,
                admit=admit,
                trial_size=trial_size,
                output=output,
            )
        for name in _HANDLERS:
            handler = target.__dict__.get(name)
            if handler is not None:
                wrapped = _priced_handler(
                    route_name,
                    handler,
                    precheck=precheck,
                    admit=admit,
                    trial_size=trial_size,
                    output=output,
                )
                setattr(target, name, wrapped)
        apply_unpaid_limit(target, paid_exempt=True)
        target.priced_route = priced_route(route_name)  # type: ignore[attr-defined]
        return target

    return decorate
