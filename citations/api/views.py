"""Ledger routes: parse the request, call one service, render the result."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from attest.errors import NotFound, RateLimited, client_code
from attest.ratelimit import rate_limit
from attest.rendering import rendered
from attest.replicas import record_write
from attest.schema import route_error_responses
from citations.api import route_errors
from citations.api import serializers as s
from citations.auth import CredentialAuthentication, HasProjectCredential, ProjectPrincipal
from citations.models import Project
from citations.selectors import INVENTORY_DEFAULT_LIMIT
from citations.services import (
    MessageIn,
    citation_resolve,
    facts_recall,
    observations_ingest,
)
from citations.services.audit import audit_failure
from citations.services.authoring import fact_author
from citations.services.corrections import fact_retract
from citations.services.predicates import predicate_declare, predicates_list
from citations.services.reads import facts_list

logger = logging.getLogger("attest.citations")

POLICY = "ledger"


def parse_fact_id(raw: str) -> uuid.UUID:
    """A fact ID from the path: one that is not a UUID names no fact, like an unknown one."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise NotFound("No fact with this ID exists in this project.") from None


class LedgerView(APIView):
    authentication_classes = [CredentialAuthentication]
    permission_classes = [HasProjectCredential]

    def check_permissions(self, request: Request) -> None:
        super().check_permissions(request)
        # Counted per credential in the shared cache, so every worker sees one budget.
        decision = rate_limit(
            key=_principal(request).credential.prefix,
            rate=settings.ATTEST_LEDGER_RATE,
            policy=POLICY,
        )
        # The stubs give a request no attributes of one's own; Django and DRF let a view
        # hang them on it (attest/middleware.py does the same with the request ID).
        request.rate_limit_headers = decision.headers()  # type: ignore[attr-defined]
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

    # Methods that only read the ledger (their audit event aside): they may be served by a
    # read replica, and leave no write position behind (attest.replicas).
    read_methods: frozenset[str] = frozenset()

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        principal = getattr(request, "_user", None)
        project = getattr(principal, "project", None)
        wrote = response.status_code < 400 and request.method not in self.read_methods
        if project is not None and wrote:
            # Committed by now: a replica serves this project only once past it.
            record_write(str(project.pk))
        for name, value in getattr(request, "rate_limit_headers", {}).items():
            response.setdefault(name, value)
        return response

    def caller(self, request: Request) -> tuple[Project, str, str]:
        """(project, actor for the audit log, request ID) of an authenticated request."""
        principal = _principal(request)
        return principal.project, principal.actor, getattr(request, "request_id", "")

    # The audit operation of each method: a refused or failed call is recorded under it.
    operations: dict[str, str] = {}

    def audited_ids(self, request: Request) -> list[str]:
        """The IDs a failed call named, when they are well-formed IDs (never free text)."""
        return []

    def handle_exception(self, exc: Exception) -> Response:
        self._audit_failure(exc)
        return super().handle_exception(exc)

    def _audit_failure(self, exc: Exception) -> None:
        # Only calls that reached the operation: without a project there is no chain, and
        # a throttled call did nothing (recording each one would let a flood fill the log).
        principal = getattr(self.request, "_user", None)
        project = getattr(principal, "project", None)
        operation = self.operations.get(self.request.method or "")
        if (
            principal is None
            or project is None
            or operation is None
            or isinstance(exc, RateLimited)
        ):
            return
        try:
            object_ids = self.audited_ids(self.request)
        except APIException:  # a body that is not JSON names no ID
            object_ids = []
        try:
            audit_failure(
                project=project,
                operation=operation,
                actor=principal.actor,
                object_ids=object_ids,
                outcome=client_code(exc),
                request_id=getattr(self.request, "request_id", ""),
            )
        except Exception:  # the original error is what the client must see
            logger.exception("could not audit a failed %s", operation)


def _principal(request: Request) -> ProjectPrincipal:
    """The caller of a request HasProjectCredential has admitted."""
    principal = request.user
    assert isinstance(principal, ProjectPrincipal)
    return principal


def _uuid_or_nothing(raw: object) -> list[str]:
    try:
        return [str(uuid.UUID(raw))] if isinstance(raw, str) else []
    except ValueError:
        return []


class ObservationsView(LedgerView):
    operations = {"POST": "observations.ingest"}

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
            **route_error_responses(route_errors.OBSERVATIONS),
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
        body = rendered(s.ObservationsOut, result)
        return Response(body, status=status.HTTP_201_CREATED)


class RecallView(LedgerView):
    operations = {"POST": "facts.recall"}
    read_methods = frozenset({"POST"})

    @extend_schema(
        summary="Recall facts about a subject",
        description=(
            "Facts true now and believed now, unless `as_of` asks for another valid time "
            "(`valid_at`) or known time (`known_at`). With `known_at` alone, `valid_at` "
            "defaults to it. Optional `predicate`. With `query` (a question in plain words) "
            "the facts are ranked by the database's full-text search over the statement, "
            "the value and the predicate's name, description and synonyms (any of the "
            "question's words, English stemming, stop words dropped) and by what its "
            'question words ask for ("where" a place, "who" a person, "when" a date, '
            '"how" a preference, "what does she do" an occupation), each with a `score` '
            "from 0 to 1, highest first; `limit` defaults to 20 (at most 100). Without "
            "`query`, by predicate then latest start, `limit` default 50, at most 200. Send "
            "`next` back unchanged as `after` for the next page."
        ),
        request=s.RecallIn,
        responses={
            200: s.RecallOut,
            **route_error_responses(route_errors.RECALL),
        },
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        data = s.RecallIn(data=request.data)
        data.is_valid(raise_exception=True)
        project, actor, request_id = self.caller(request)
        as_of = data.validated_data.get("as_of") or {}
        page = facts_recall(
            project=project,
            subject_id=data.validated_data["subject"],
            predicate=data.validated_data.get("predicate"),
            query=data.validated_data.get("query"),
            valid_at=as_of.get("valid_at"),
            known_at=as_of.get("known_at"),
            limit=data.validated_data["limit"],
            after=data.validated_data.get("after"),
            actor=actor,
            request_id=request_id,
        )
        return Response(rendered(s.RecallOut, page))


class ResolveView(LedgerView):
    operations = {"POST": "citation.resolve"}
    read_methods = frozenset({"POST"})

    def audited_ids(self, request: Request) -> list[str]:
        data = request.data if isinstance(request.data, dict) else {}
        return _uuid_or_nothing(data.get("id"))

    @extend_schema(
        summary="Resolve a citation",
        description=(
            "A fact with its evidence: each quote is re-read from the stored message bytes "
            "and checked on every request; web evidence (`source: web`) has its receipt's "
            "signature and its quote's SHA-256 checked again instead. Pages of `limit` "
            "sources (default 8, at most 32) and at most 256 KiB of text; send `next` back "
            "unchanged as `after`."
        ),
        request=s.ResolveIn,
        responses={
            200: s.ResolveOut,
            **route_error_responses(route_errors.RESOLVE),
        },
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        project, actor, request_id = self.caller(request)
        data = s.ResolveIn(data=request.data)
        data.is_valid(raise_exception=True)
        resolved = citation_resolve(
            project=project, actor=actor, request_id=request_id, **data.validated_data
        )
        return Response(rendered(s.ResolveOut, resolved))


RESOLVED_FACT = "The fact as `POST /v1/citations/resolve` shows it, first page of evidence."


class FactRetractView(LedgerView):
    operations = {"POST": "fact.retract"}

    def audited_ids(self, request: Request) -> list[str]:
        return _uuid_or_nothing(self.kwargs.get("fact_id"))

    @extend_schema(
        summary="Retract or correct a fact",
        description=(
            "Withdraw a fact: its known interval closes and `retraction` records who, when "
            "and why. With `replacement` (a correction) the fact that is true instead is "
            "stored as an authored record by the same credential, and "
            "`retraction.replacement` names it (`replacement_id` too, the same ID). Facts the "
            "withdrawn one had closed hold again over its span. A fact is retracted once: a "
            "second retraction is refused and the first stands."
        ),
        request=s.RetractIn,
        responses={
            200: OpenApiResponse(s.ResolveOut, description=RESOLVED_FACT),
            **route_error_responses(route_errors.FACT_RETRACT),
        },
        examples=[
            OpenApiExample(
                "A correction",
                request_only=True,
                value={
                    "reason": "The user meant Cork, not Dublin.",
                    "replacement": {"statement": "I moved to Cork in March.", "value": "Cork"},
                },
            )
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request, fact_id: str) -> Response:
        project, actor, request_id = self.caller(request)
        data = s.RetractIn(data=request.data)
        data.is_valid(raise_exception=True)
        resolved = fact_retract(
            project=project,
            fact_id=parse_fact_id(fact_id),
            reason=data.validated_data["reason"],
            replacement=data.replacement_object(),
            actor=actor,
            request_id=request_id,
        )
        return Response(s.ResolveOut(resolved).data)


class FactsView(LedgerView):
    operations = {"GET": "facts.list", "POST": "fact.author"}
    read_methods = frozenset({"GET"})

    @extend_schema(
        summary="Record inventory",
        description=(
            "Every fact of the project, newest first, as its latest version shows it "
            "(retracted and closed facts included), optionally for one `subject`, "
            "`predicate` or `status`. `limit` facts a page (default 50, at most 200); send "
            "`next.cursor` back as `after` for the next page."
        ),
        parameters=[s.InventoryQuery],
        responses={
            200: s.InventoryOut,
            **route_error_responses(route_errors.FACTS_LIST),
        },
        tags=["fact ledger"],
    )
    def get(self, request: Request) -> Response:
        project, actor, request_id = self.caller(request)
        query = s.InventoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = facts_list(
            project=project,
            subject_id=query.validated_data.get("subject"),
            predicate=query.validated_data.get("predicate"),
            status=query.validated_data.get("status"),
            limit=query.validated_data.get("limit", INVENTORY_DEFAULT_LIMIT),
            after=query.validated_data.get("after"),
            actor=actor,
            request_id=request_id,
        )
        return Response(s.InventoryOut(page).data)

    @extend_schema(
        summary="Write an authored record",
        description=(
            "A person states a fact directly. It is stored as a message of its own and "
            "placed on the subject's timeline like an extracted fact (a functional "
            "predicate supersedes the value it follows); its evidence carries "
            "`authored_by`. A statement of the value already believed adds evidence to "
            "that fact instead of a second one. With `evidence`, the record is backed by "
            "quotes Attest verified on web pages: each receipt's signature, the quote's "
            "SHA-256, the signed verdict (`exact` or `fuzzy`) and the page's "
            "`content_kind` (`real`) are checked before anything is written, and each quote "
            "resolves as `source: web` evidence with its receipt."
        ),
        request=s.AuthoredFactIn,
        responses={
            201: OpenApiResponse(s.ResolveOut, description=RESOLVED_FACT),
            **route_error_responses(route_errors.FACTS_CREATE),
        },
        examples=[
            OpenApiExample(
                "An authored record",
                request_only=True,
                value={
                    "subject": "user-1",
                    "predicate": "lives_in",
                    "statement": "Lives in Cork since June.",
                    "value": "Cork",
                    "authored_by": "support:ana",
                    "valid_from": "2026-06-01T00:00:00Z",
                },
            ),
            OpenApiExample(
                "Backed by a verified web quote",
                request_only=True,
                value={
                    "subject": "paper-42",
                    "predicate": "likes",
                    "statement": "The committee was deeply concerned about the results.",
                    "evidence": [
                        {
                            "receipt": "eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLiJ9.eyJ...fQ.c2ln",
                            "quote": "deeply concerned about the results",
                            "index": 0,
                        }
                    ],
                },
            ),
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        project, actor, request_id = self.caller(request)
        data = s.AuthoredFactIn(data=request.data)
        data.is_valid(raise_exception=True)
        resolved = fact_author(
            project=project,
            subject_id=data.validated_data["subject"],
            statement=data.statement_object(),
            authored_by=data.validated_data.get("authored_by"),
            actor=actor,
            web_evidence=data.web_evidence(),
            message_evidence=data.message_evidence(),
            extracted_by=data.validated_data.get("extracted_by", ""),
            request_id=request_id,
        )
        return Response(s.ResolveOut(resolved).data, status=status.HTTP_201_CREATED)


class PredicatesView(LedgerView):
    operations = {"GET": "predicates.list", "POST": "predicate.declare"}
    read_methods = frozenset({"GET"})

    @extend_schema(
        summary="List the predicates",
        description=(
            "Every predicate the project can record facts under: the built-in ones (read by "
            "the built-in extractor) first, then those the project declared, each with its "
            "cardinality (`one`: a new value supersedes the old; `many`: values accumulate)."
        ),
        responses={
            200: s.PredicatesOut,
            **route_error_responses(route_errors.PREDICATES_LIST),
        },
        tags=["fact ledger"],
    )
    def get(self, request: Request) -> Response:
        project, _, _ = self.caller(request)
        return Response(s.PredicatesOut({"predicates": predicates_list(project=project)}).data)

    @extend_schema(
        summary="Declare a predicate",
        description=(
            "Declare a predicate of the project's own, with its cardinality. `201` with the "
            "predicate; declaring the same name and cardinality again is `200` with the same "
            "object. A built-in's name, or a declared name with another cardinality, is "
            "`409 predicate_conflict`."
        ),
        request=s.PredicateIn,
        responses={
            201: s.PredicateOut,
            200: s.PredicateOut,
            **route_error_responses(route_errors.PREDICATES_DECLARE),
        },
        examples=[
            OpenApiExample(
                "A preference",
                request_only=True,
                value={
                    "name": "prefers_theme",
                    "cardinality": "one",
                    "description": "The UI theme the user chose.",
                },
            )
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        project, actor, request_id = self.caller(request)
        data = s.PredicateIn(data=request.data)
        data.is_valid(raise_exception=True)
        predicate, created = predicate_declare(
            project=project,
            name=data.validated_data["name"],
            cardinality=data.validated_data["cardinality"],
            description=data.validated_data.get("description", ""),
            synonyms=data.validated_data.get("synonyms", ()),
            actor=actor,
            request_id=request_id,
        )
        return Response(
            s.PredicateOut(predicate).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )
