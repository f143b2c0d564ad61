"""/v1/credits: buy prepaid credit over x402 (a new project, or a top-up), read the balance."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from attest.schema import route_error_responses
from billing.decorators import PricedCallContext, priced_spec
from billing.money import usd_micros, usd_text
from billing.openapi import PAYMENT_PARAMETERS
from billing.owners import bearer_token, owner_of, owner_open
from billing.pipeline import PricedSpec
from billing.pricing import top_up_route
from billing.services.credit import (
    CURRENCY,
    credit_balance,
    credit_statement,
    top_up_owner,
)
from citations.api import credit_serializers as s
from citations.api import route_errors
from citations.auth import CredentialAuthentication, ProjectPrincipal
from citations.credits import owner_name, project_owner


def check_top_up(request: Request) -> dict[str, str]:
    """The amount, and whose balance it is for: the Bearer credential's project (401
    ``invalid_credential`` before any payment if it pays for no one), or a new one."""
    body = s.CreditsIn(data=request.data)
    body.is_valid(raise_exception=True)
    token = bearer_token(request.headers.get("Authorization", ""))
    return {"amount": body.validated_data["amount"], "owner": owner_of(token) if token else ""}


TOP_UP = PricedSpec(
    route=lambda checked: top_up_route(checked["amount"]),
    precheck=check_top_up,
    output=None,
    trial=False,  # credit is bought, never given
    credit=False,  # nor paid for with credit: a Bearer credential here names the project
)


@priced_spec(TOP_UP, methods=("post",))
class CreditsView(APIView):
    """POST /v1/credits buys prepaid credit over x402; GET /v1/credits reads the balance."""

    authentication_classes = [CredentialAuthentication]

    def get_permissions(self) -> list[BasePermission]:
        """POST needs no credential (a payment without one opens a new project); the schema
        then marks the credential optional for it, as drf-spectacular does for AllowAny."""
        return [AllowAny()] if self.request.method == "POST" else []

    def perform_authentication(self, request: Request) -> None:
        """Only GET reads the credential as a login; POST's names the project to top up."""

    @extend_schema(
        summary="Buy prepaid credit",
        description=(
            "Pays `amount` US dollars over x402 (unpaid: the 402 offer for exactly that "
            "amount). Without Authorization a new project is made and its credential shown "
            "once (201); with `Authorization: Bearer` of a project its balance grows (200). "
            "The same payment sent twice tops up once. The balance then pays any priced "
            "route or MCP tool called with the credential and no payment header."
        ),
        request=s.CreditsIn,
        parameters=PAYMENT_PARAMETERS,
        responses={
            201: s.CreditsOpened,
            200: s.CreditsToppedUp,
            **route_error_responses(route_errors.CREDITS_BUY),
        },
        examples=[OpenApiExample("five dollars", request_only=True, value={"amount": "5.00"})],
        tags=["credit"],
    )
    def post(self, request: Request, *, call: PricedCallContext) -> Response:
        checked: dict[str, Any] = call.prechecked
        assert call.payment is not None  # x402 only: no trial, no credit
        amount = usd_micros(checked["amount"])
        if checked["owner"]:
            owner = checked["owner"]
            top_up_owner(call.payment.claim, owner)
            body = {
                "project": owner_name(owner),
                "balance": usd_text(credit_balance(owner) + amount),
                "currency": CURRENCY,
            }
            return Response(body, status=status.HTTP_200_OK)
        opened = owner_open()
        top_up_owner(call.payment.claim, opened.key)
        body = {
            "credential": opened.credential,
            "project": opened.name,
            "balance": usd_text(amount),
            "currency": CURRENCY,
        }
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Read the prepaid balance",
        description=(
            "The credential's project's balance and its movements (top-ups, holds, draws, "
            "releases), newest first; `next` pages to older ones."
        ),
        parameters=[s.CreditStatementIn],
        responses={200: s.CreditStatementOut, **route_error_responses(route_errors.CREDITS_READ)},
        tags=["credit"],
    )
    def get(self, request: Request) -> Response:
        principal = request.user
        if not isinstance(principal, ProjectPrincipal):
            raise exceptions.NotAuthenticated()
        query = s.CreditStatementIn(data=request.query_params)
        query.is_valid(raise_exception=True)
        statement = credit_statement(
            owner=project_owner(principal.project),
            after=query.validated_data.get("after"),
            limit=query.validated_data["limit"],
        )
        body: dict[str, Any] = {
            "balance": usd_text(statement.balance),
            "currency": CURRENCY,
            "movements": [
                {
                    "type": event.kind,
                    "amount": usd_text(event.amount),
                    "at": event.at,
                    **({"route": event.route} if event.route else {}),
                    **({"request_id": event.request_id} if event.request_id else {}),
                }
                for event in statement.movements
            ],
        }
        if statement.next_after is not None:
            body["next"] = str(statement.next_after)
        return Response(s.CreditStatementOut().to_representation(body))
