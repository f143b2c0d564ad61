"""Ledger routes: parse the request, call one service, render the result."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from attest.errors import RateLimited
from attest.ratelimit import rate_limit
from attest.schema import error_response
from citations import serializers as s
from citations.auth import CredentialAuthentication, HasProjectCredential
from citations.selectors import iso_utc
from citations.services import (
    MessageIn,
    citation_resolve,
    facts_recall,
    observations_ingest,
)

AUTH_ERRORS = {
    401: error_response("`unauthenticated`: no credential, or an unknown or revoked one."),
    403: error_response("`project_suspended`: the credential's project is suspended."),
    429: error_response("`rate_limited`: too many requests for this credential; see Retry-After."),
}


POLICY = "ledger"


class LedgerView(APIView):
    authentication_classes = [CredentialAuthentication]
    permission_classes = [HasProjectCredential]

    def check_permissions(self, request: Request) -> None:
        super().check_permissions(request)
        # Counted per credential in the shared cache, so every worker sees one budget.
        decision = rate_limit(
            key=request.user.credential.prefix, rate=settings.ATTEST_LEDGER_RATE, policy=POLICY
        )
        request.rate_limit_headers = decision.headers()
        if not decision.allowed:
            raise RateLimited(
                f"Over {decision.limit} requests in {decision.window} seconds for this "
                "credential; retry after Retry-After seconds.",
                retry_after=decision.wait,
                headers=decision.headers(),
                details={
                    "reason": "credential_requests",
                    "limit": decision.limit,
                    "window": decision.window,
                },
            )

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in getattr(request, "rate_limit_headers", {}).items():
            response.setdefault(name, value)
        return response

    def caller(self, request: Request) -> tuple:
        """(project, actor for the audit log, request ID) of an authenticated request."""
        return request.user.project, request.user.actor, getattr(request, "request_id", "")


class ObservationsView(LedgerView):
    @extend_schema(
        summary="Ingest messages",
        description=(
            "Store messages for a subject and extract facts from first-person statements in "
            "user messages. Re-sending a message ID returns the stored observation and adds "
            "nothing."
        ),
        request=s.ObservationsIn,
        responses={
            201: s.ObservationsOut,
            400: error_response("`invalid_request` (with `details.field`) or `invalid_json`."),
            **AUTH_ERRORS,
            409: error_response(
                "`message_conflict`: the message ID was stored with other text, role, time "
                "or subject."
            ),
        },
        examples=[
            OpenApiExample(
                "One message",
                request_only=True,
                value={
                    "subject": "user-1",
                    "messages": [
                        {
                            "id": "m1",
                            "role": "user",
                            "text": "I moved to Dublin in March.",
                            "occurred_at": "2026-03-04T10:11:58Z",
                        }
                    ],
                },
            )
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        data = s.ObservationsIn(data=request.data)
        data.is_valid(raise_exception=True)
        project, actor, request_id = self.caller(request)
        result = observations_ingest(
            project=project,
            subject_id=data.validated_data["subject"],
            messages=[
                MessageIn(
                    message_id=m["id"],
                    role=m["role"],
                    text=m["text"],
                    occurred_at=m["occurred_at"],
                    session=m.get("session", ""),
                    ordinal=m.get("ordinal"),
                )
                for m in data.validated_data["messages"]
            ],
            actor=actor,
            request_id=request_id,
        )
        body = {
            "observations": [
                {
                    "id": str(obs.pk),
                    "message_id": obs.message_id,
                    "subject": data.validated_data["subject"],
                    "role": obs.role,
                    "occurred_at": iso_utc(obs.occurred_at),
                    "received_at": iso_utc(obs.received_at),
                    "sha256": obs.content_sha256,
                    "bytes": len(obs.content),
                    "session": obs.session,
                    "ordinal": obs.ordinal,
                    "created": created,
                }
                for obs, created in result.observations
            ],
            "facts": [
                {
                    "id": str(fact.pk),
                    "predicate": fact.predicate,
                    "value": fact.value,
                    "statement": fact.statement,
                    "status": status_now,
                    "change": change,
                }
                for fact, change, status_now in result.fact_statuses()
            ],
        }
        return Response(body, status=status.HTTP_201_CREATED)


class RecallView(LedgerView):
    @extend_schema(
        summary="Recall facts about a subject",
        description=(
            "Facts true now and believed now, unless `as_of` asks for another valid time "
            "(`valid_at`) or known time (`known_at`). With `known_at` alone, `valid_at` "
            "defaults to it. Optional `predicate` and `query` (text in the statement or value)."
        ),
        request=s.RecallIn,
        responses={
            200: s.RecallOut,
            400: error_response("`invalid_request` (with `details.field`) or `invalid_json`."),
            **AUTH_ERRORS,
        },
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        data = s.RecallIn(data=request.data)
        data.is_valid(raise_exception=True)
        project, actor, request_id = self.caller(request)
        as_of = data.validated_data.get("as_of") or {}
        facts = facts_recall(
            project=project,
            subject_id=data.validated_data["subject"],
            predicate=data.validated_data.get("predicate"),
            query=data.validated_data.get("query"),
            valid_at=as_of.get("valid_at"),
            known_at=as_of.get("known_at"),
            limit=data.validated_data["limit"],
            actor=actor,
            request_id=request_id,
        )
        return Response({"facts": facts})


class ResolveView(LedgerView):
    @extend_schema(
        summary="Resolve a citation",
        description=(
            "A fact with its evidence: each quote is re-read from the stored message bytes "
            "and checked on every request. Pages of `limit` sources (default 8, at most 32) "
            "and at most 256 KiB of text; send `next` back unchanged as `after`."
        ),
        request=s.ResolveIn,
        responses={
            200: s.ResolveOut,
            400: error_response("`invalid_citation`: the ID or the page parameters are malformed."),
            **AUTH_ERRORS,
            404: error_response("`not_found`: unknown, erased, or another project's ID (alike)."),
            422: error_response(
                "`citation_limit`: the source text is too large; use a subject export."
            ),
            500: error_response(
                "`evidence_mismatch`: stored bytes do not match; no evidence returned."
            ),
        },
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        project, actor, request_id = self.caller(request)
        body = citation_resolve(
            project=project, payload=request.data, actor=actor, request_id=request_id
        )
        return Response(body)
