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
        output=VerifyCitationsOutput,          # renders the answer with its payment fields
        bounds=MY_BOUNDS,                      # the app's limits on unpaid and refused work
    )
    class VerifyCitationsView(APIView):
        def post(self, request, *, call: PricedCallContext):
            ...  # call.tier is "trial" or "paid"; call.rail "x402" or "credit" when paid
            return Response(answer)            # charged; set response.charged = False if not

What happens to the request, in order, is ``billing.pipeline.priced_call``; read it there.
A request without a payment header or a credential counts against the caller's unpaid
limit (class form only).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from django.http import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from billing.pipeline import (
    UNBOUNDED,
    Admit,
    CallBounds,
    Precheck,
    PricedCallContext,
    PricedSpec,
    TrialSize,
    priced_call,
)
from billing.pricing import PricedRoute, priced_route
from billing.recorders import AnswerRecorder, register_recorder
from billing.unpaid import apply_unpaid_limit

__all__ = ["PricedCallContext", "priced", "priced_spec"]

_HANDLERS = ("get", "post", "put", "patch", "delete")


def _priced_handler(spec: PricedSpec, handler: Callable[..., Response]) -> Callable[..., Any]:
    @functools.wraps(handler)
    def priced_handler(view: Any, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return priced_call(spec, handler, view, request, *args, **kwargs)

    # The route tags the handler and the view class; no type declares such an attribute.
    priced_handler.priced_route = spec.route  # type: ignore[attr-defined]
    return priced_handler


def priced(
    route_name: str,
    *,
    precheck: Precheck | None = None,
    admit: Admit | None = None,
    trial_size: TrialSize | None = None,
    recorder: AnswerRecorder | None = None,
    output: type[Serializer] | None = None,
    bounds: CallBounds | None = None,
) -> Callable[[Any], Any]:
    """Declare a view class (or one handler method) as priced under ``route_name``.

    ``precheck(request, *args, **kwargs)`` validates the request without any outbound work.
    ``admit(request, prechecked, paid=...)`` makes the outbound checks (a host's address,
    robots.txt): before the offer for an unpaid request, after the payment is verified (or
    the credit held) for a paid one. What the last of them returns reaches the handler as
    ``call.prechecked``. An error either raises is never charged.
    ``trial_size(prechecked)`` says how many trial calls the request is (1 without it).
    ``recorder`` is told when a paid answer the view produced is withheld, or delivered
    later to a retry (billing.recorders). ``output`` is the serializer a charged 2xx answer
    is rendered by, once, with its payment fields. ``bounds`` are the app's limits on
    unpaid checks and on uncharged failures after payment (billing.pipeline.CallBounds).
    """
    route = priced_route(route_name)  # an unknown route fails at import, not on the first call
    if recorder is not None:
        register_recorder(route_name, recorder)
    spec = PricedSpec(
        route=route,
        precheck=precheck,
        admit=admit,
        trial_size=trial_size,
        output=output,
        bounds=bounds or UNBOUNDED,
    )
    return priced_spec(spec)


def priced_spec(spec: PricedSpec, *, methods: tuple[str, ...] = _HANDLERS) -> Callable[[Any], Any]:
    """``@priced`` from a whole spec: e.g. a route priced by its request, or x402 only.
    On a class, only the handlers of ``methods`` are priced (every one by default)."""

    def decorate(target: Any) -> Any:
        if not inspect.isclass(target):
            return _priced_handler(spec, target)
        for name in methods:
            handler = target.__dict__.get(name)
            if handler is not None:
                setattr(target, name, _priced_handler(spec, handler))
        apply_unpaid_limit(target, paid_exempt=True, credit_exempt=spec.credit)
        if isinstance(spec.route, PricedRoute):
            target.priced_route = spec.route  # type: ignore[attr-defined]
        return target

    return decorate
