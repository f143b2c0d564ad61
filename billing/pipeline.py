"""The paid call, one pipeline: every priced REST route (and so every priced MCP tool,
which runs its route's view in process) goes through ``priced_call``, top to bottom:

1. **check the request** (``precheck``): the body, with no outbound work; a bad one is
   400 whatever the request carries to pay with;
2. **decide how it is paid** (``call_rail``): a payment header → x402, whatever else is
   sent; else a Bearer credential → prepaid credit (401 ``invalid_credential`` for one
   that pays for no one); else unpaid → the free trial, or the offer;
3. **admit the target, unpaid** (``admit``, under the caller's few places for unpaid
   checks): before the offer, so a refused URL is never offered for sale;
4. **admit the payment** (``call_admit``): a trial call reserved, the price held from the
   balance, or the x402 payment verified and claimed; a retry of a request already paid
   for gets the stored answer here and nothing below runs;
5. **the work, inside the uncharged-failure bound** (one scope for a paid call): the
   target admitted now if paid (junk buys no DNS lookup), then the handler; any error is
   never charged and gives back the trial call, the hold or the claim;
6. **render once**: a charged answer gains its payment fields and is rendered by the
   route's output serializer, once;
7. **charge**: a trial call counted, the hold drawn, or the x402 payment settled before
   the answer leaves (its bytes kept for a retry);
8. **answer**.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from django.http import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from attest.errors import AttestError
from attest.rendering import rendered
from attest.tracing import traced_step
from billing import charging
from billing.client_ip import client_ip
from billing.pricing import PricedRoute
from billing.services import (
    PricedCall,
    Rail,
    RenderedAnswer,
    VerifiedPayment,
    answer_response,
    call_admit,
    call_draw_credit,
    call_rail,
    call_record_trial_use,
    call_release,
    call_settle_paid,
    request_digest,
)

Precheck = Callable[..., Any]
Admit = Callable[..., Any]
TrialSize = Callable[[Any], int]


class CallBounds(Protocol):
    """The limits a route's app keeps on work nobody pays for, applied by the pipeline.

    ``unpaid_checks``: what an unpaid call's outbound checks (before the offer) run under.
    ``paid_work``: what a paid call's admission and work run under: the caller's bucket
    of uncharged failures (an error raised inside uses a place; none left, the call is
    refused first).
    """

    def unpaid_checks(self, *, client_ip: str) -> AbstractContextManager[None]: ...

    def paid_work(self, *, client_ip: str) -> AbstractContextManager[None]: ...


class Unbounded:
    """No limits beyond billing's own (a route that makes no outbound checks)."""

    def unpaid_checks(self, *, client_ip: str) -> AbstractContextManager[None]:
        return nullcontext()

    def paid_work(self, *, client_ip: str) -> AbstractContextManager[None]:
        return nullcontext()


UNBOUNDED = Unbounded()


@dataclass(frozen=True)
class PricedCallContext:
    """What a priced handler is given, as its ``call`` keyword argument."""

    prechecked: Any  # what the precheck (then admit) returned (None without one)
    tier: str  # "trial" or "paid"
    payment: VerifiedPayment | None  # the verified, claimed payment of an x402-paid call
    rail: str = ""  # "x402" or "credit" for a paid call


@dataclass(frozen=True)
class PricedSpec:
    """What a priced route declares (``@priced``); see billing.decorators."""

    route: PricedRoute | Callable[[Any], PricedRoute]  # fixed, or from the checked request
    precheck: Precheck | None = None
    admit: Admit | None = None
    trial_size: TrialSize | None = None
    output: type[Serializer] | None = None
    bounds: CallBounds = UNBOUNDED
    trial: bool = True  # an unpaid call may be a free trial (else: the offer)
    credit: bool = True  # a Bearer credential may pay from its balance

    def route_for(self, checked: Any) -> PricedRoute:
        return self.route if isinstance(self.route, PricedRoute) else self.route(checked)


def priced_call(
    spec: PricedSpec,
    handler: Callable[..., Response],
    view: Any,
    request: Request,
    *args: Any,
    **kwargs: Any,
) -> HttpResponseBase:
    """Run one priced request through the steps above; see the module."""
    caller = client_ip(request)
    checked = spec.precheck(request, *args, **kwargs) if spec.precheck else None  # 1
    route = spec.route_for(checked)
    rail = call_rail(headers=request.headers, client_ip=caller, accepts_credit=spec.credit)  # 2
    if not rail.paid and spec.admit is not None:  # 3
        with spec.bounds.unpaid_checks(client_ip=caller):
            checked = spec.admit(request, checked, paid=False)
    call = _admit_call(spec, request, route=route, rail=rail, caller=caller, checked=checked)  # 4
    if call.replay is not None:
        return call.replay  # already paid for and answered: the same bytes again
    try:  # 5
        with spec.bounds.paid_work(client_ip=caller) if rail.paid else nullcontext():
            if rail.paid and spec.admit is not None:
                checked = spec.admit(request, checked, paid=True)
            context = PricedCallContext(
                prechecked=checked, tier=call.tier, payment=call.payment, rail=call.rail
            )
            response = handler(view, request, *args, call=context, **kwargs)
    except AttestError as exc:
        call_release(call=call, outcome=exc.code)
        raise
    except BaseException:
        call_release(call=call, outcome="server_error")
        raise
    if not charging.response_is_charged(
        status=response.status_code, charged=getattr(response, "charged", None)
    ):
        call_release(call=call, outcome=f"uncharged_{response.status_code}")
        return response
    _render_once(spec, response, call)  # 6
    return _charge(call, view, request, response, *args, **kwargs)  # 7, 8


def _admit_call(
    spec: PricedSpec,
    request: Request,
    *,
    route: PricedRoute,
    rail: Rail,
    caller: str,
    checked: Any,
) -> PricedCall:
    assert request.method is not None  # the stubs allow None; a routed request has one
    return call_admit(
        route=route,
        rail=rail,
        client_ip=caller,
        request_id=getattr(request, "request_id", ""),
        request_digest=request_digest(
            method=request.method, route=route.name, data=request.data, query=request.query_params
        ),
        trial_size=spec.trial_size(checked) if spec.trial_size else 1,
        trial=spec.trial,
    )


def _render_once(spec: PricedSpec, response: Response, call: PricedCall) -> None:
    """The answer with its payment fields, rendered by the route's serializer, once."""
    if not isinstance(response.data, dict):
        return
    data = {**response.data, **call.response_fields}
    response.data = rendered(spec.output, data) if spec.output is not None else data


def _charge(
    call: PricedCall, view: Any, request: Request, response: Response, *args: Any, **kwargs: Any
) -> HttpResponseBase:
    """Count the trial call, draw the hold, or settle the payment before the answer leaves."""
    if call.hold is not None:
        call_draw_credit(call=call)
        return response
    if call.payment is None:
        call_record_trial_use(call=call)
        return response
    # The bytes are kept before settlement so a retry gets exactly them.
    response = view.finalize_response(request, response, *args, **kwargs)
    response.render()
    # Any failure here raises before the body leaves: the answer is held until settled.
    with traced_step("billing.settle", {"attest.route": call.route.name}):
        answer = call_settle_paid(call=call, rendered=RenderedAnswer.from_response(response))
    return answer_response(answer, legacy_header=call.payment.legacy_header)
