"""The change feed and the subjects list: what an agent reads to keep its memory in step."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from attest.rendering import rendered
from attest.schema import route_error_responses
from citations.api import route_errors
from citations.api import serializers as s
from citations.api.views import LedgerView
from citations.selectors.changes import SUBJECTS_DEFAULT_LIMIT
from citations.services.reads import changes_list, subjects_list


class ChangesView(LedgerView):
    operations = {"POST": "changes.list"}
    read_methods = frozenset({"POST"})

    @extend_schema(
        summary="List what changed",
        description=(
            "Every change to the project's facts in commit order: `created`, `superseded`, "
            "`retracted`, `reinterpreted` (a rebuild replaced it) and `erased`, each once, "
            "with the fact's ID, subject and predicate and when the ledger learned it. "
            "Optionally one `subject`'s. `limit` changes a page (default 50, at most 200). "
            "Every page with changes carries `next`: send it back unchanged as `after` for "
            "the next page, now or later (a change committed after a page was read always "
            "comes after it); a page without changes has no `next`: ask again later with the "
            "same `after`. No content: an erased subject's "
            "changes show `subject: null` (its own feed is empty, as an unknown subject's "
            "is) and an erased fact's `predicate: null`."
        ),
        request=s.ChangesIn,
        responses={200: s.ChangesOut, **route_error_responses(route_errors.CHANGES)},
        examples=[
            OpenApiExample(
                "Since the last page", request_only=True, value={"subject": "user-1", "limit": 50}
            )
        ],
        tags=["fact ledger"],
    )
    def post(self, request: Request) -> Response:
        data = s.ChangesIn(data=request.data)
        data.is_valid(raise_exception=True)
        project, actor, request_id = self.caller(request)
        page = changes_list(
            project=project,
            subject_id=data.validated_data.get("subject"),
            limit=data.validated_data["limit"],
            after=data.validated_data.get("after"),
            actor=actor,
            request_id=request_id,
        )
        return Response(rendered(s.ChangesOut, page))


class SubjectsView(LedgerView):
    operations = {"GET": "subjects.list"}
    read_methods = frozenset({"GET"})

    @extend_schema(
        summary="List the subjects",
        description=(
            "The project's subjects in order of their IDs, each with its number of facts "
            "(erased ones left out) and when its latest message was sent. An erased "
            "subject is not listed, like one never seen. `limit` subjects a page (default "
            "50, at most 200); send `next.cursor` back as `after`."
        ),
        parameters=[s.SubjectsQuery],
        responses={200: s.SubjectsOut, **route_error_responses(route_errors.SUBJECTS_LIST)},
        tags=["fact ledger"],
    )
    def get(self, request: Request) -> Response:
        project, actor, request_id = self.caller(request)
        query = s.SubjectsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = subjects_list(
            project=project,
            limit=query.validated_data.get("limit", SUBJECTS_DEFAULT_LIMIT),
            after=query.validated_data.get("after"),
            actor=actor,
            request_id=request_id,
        )
        return Response(rendered(s.SubjectsOut, page))
