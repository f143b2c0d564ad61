"""Lifecycle routes of the ledger: rebuilds, erasure and the subject export."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from attest.schema import route_error_responses
from citations.api import lifecycle_serializers as s
from citations.api import route_errors
from citations.api.serializers import FactOut
from citations.api.views import LedgerView
from citations.services.erasure import erasure_perform
from citations.services.export import subject_export
from citations.services.rebuilds import project_rebuild_start, rebuild_get, source_rebuild
from citations.tasks import project_rebuild_enqueue


class RebuildsView(LedgerView):
    operations = {"POST": "rebuild.request"}

    @extend_schema(
        summary="Rebuild facts from stored messages",
        description=(
            "Read stored messages again with the current extractor in a new generation. "
            '`{subject, message_id}` rebuilds one source at once (201); `{scope: "project"}` '
            "queues a project rebuild on the task queue (202, `state: running`): follow it "
            "at `GET /v1/rebuilds/{id}`. Every fact of the scope from an older generation "
            "resolves `reinterpreted` with `reinterpreted_by` naming the new generation; the "
            "facts it admits carry `generation`."
        ),
        request=s.RebuildIn,
        responses={
            201: s.RebuildOut,
            202: s.RebuildOut,
            **route_error_responses(route_errors.REBUILDS),
        },
        examples=[
            OpenApiExample(
                "One source", request_only=True, value={"subject": "user-1", "message_id": "m1"}
            ),
            OpenApiExample("The whole project", request_only=True, value={"scope": "project"}),
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        data = s.RebuildIn(data=request.data)
        data.is_valid(raise_exception=True)
        project, actor, request_id = self.caller(request)
        if data.validated_data["scope"] == "project":
            generation = project_rebuild_start(
                project=project,
                actor=actor,
                enqueue=project_rebuild_enqueue,
                request_id=request_id,
            )
            return Response(s.RebuildOut(generation).data, status=status.HTTP_202_ACCEPTED)
        generation = source_rebuild(
            project=project,
            subject_id=data.validated_data["subject"],
            message_id=data.validated_data["message_id"],
            actor=actor,
            request_id=request_id,
        )
        return Response(s.RebuildOut(generation).data, status=status.HTTP_201_CREATED)


class RebuildView(LedgerView):
    operations = {"GET": "rebuild.get"}

    def audited_ids(self, request: Request) -> list[str]:
        return [str(self.kwargs["generation_id"])]

    @extend_schema(
        summary="Follow a rebuild",
        description="The rebuild's generation, its progress, and its counts once `done`.",
        responses={
            200: s.RebuildOut,
            **route_error_responses(route_errors.REBUILD_GET),
        },
        tags=["fact ledger"],
    )
    def get(self, request: Request, generation_id: int) -> Response:
        project, actor, request_id = self.caller(request)
        generation = rebuild_get(
            project=project, generation_id=generation_id, actor=actor, request_id=request_id
        )
        return Response(s.RebuildOut(generation).data)


class ErasuresView(LedgerView):
    operations = {"POST": "erasure.request"}

    @extend_schema(
        summary="Erase a message or a whole subject",
        description=(
            "Deletes the content (message text, quotes, statements) and keeps content-free "
            "tombstones: afterwards every route answers the erased subject, messages and "
            "facts with `404 not_found`, as it answers unknown IDs. Facts whose only "
            "evidence was erased are erased too. The audit log records IDs and counts only."
        ),
        request=s.ErasureIn,
        responses={
            200: s.ErasureOut,
            **route_error_responses(route_errors.ERASURES),
        },
        examples=[
            OpenApiExample(
                "One message", request_only=True, value={"subject": "user-1", "message_id": "m1"}
            ),
            OpenApiExample("A whole subject", request_only=True, value={"subject": "user-1"}),
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        data = s.ErasureIn(data=request.data)
        data.is_valid(raise_exception=True)
        project, actor, request_id = self.caller(request)
        erased = erasure_perform(
            project=project,
            subject_id=data.validated_data["subject"],
            message_id=data.validated_data.get("message_id"),
            actor=actor,
            request_id=request_id,
        )
        return Response(s.ErasureOut(erased).data)


class SubjectExportView(LedgerView):
    operations = {"GET": "subject.export"}
    read_methods = frozenset({"GET"})

    @extend_schema(
        summary="Export everything about a subject",
        description=(
            "A streamed `application/x-ndjson` body, one JSON object a line, all read from one "
            "consistent snapshot: `subject`, then every `observation` (with its `text`), "
            "`fact` (as resolve shows it, with `versions`), `evidence` (with the checked "
            "`quote`), `retraction`, `generation`, and last an `end` line with the counts — "
            "a stream without it was cut short. Erased rows are never exported."
        ),
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.STR, description="NDJSON lines, each with a `type`."
            ),
            **route_error_responses(route_errors.SUBJECT_EXPORT),
        },
        tags=["fact ledger"],
    )
    def get(self, request: Request, subject: str) -> StreamingHttpResponse:
        project, actor, request_id = self.caller(request)
        lines = subject_export(
            project=project,
            subject_id=subject,
            actor=actor,
            # One serializer for every line: building its fields costs more than a fact.
            render_fact=FactOut().to_representation,
            request_id=request_id,
        )
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Cache-Control"] = "no-store"
        return response
