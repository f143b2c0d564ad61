"""Request and response shapes of the ledger's lifecycle routes: rebuilds, erasure, export."""

from __future__ import annotations

from rest_framework import serializers

from attest.fields import StrictCharField, StrictChoiceField
from citations.models import EXTERNAL_ID_MAX_LENGTH, Generation
from citations.selectors import iso_utc
from citations.services.rebuilds import KIND_NAMES, REBUILD_KINDS


class RebuildIn(serializers.Serializer):
    """One source (`subject` and `message_id`) or the whole project (`scope: "project"`)."""

    scope = StrictChoiceField(choices=REBUILD_KINDS, required=False)
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH, required=False)
    message_id = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH, required=False)

    def validate(self, attrs: dict) -> dict:
        scope = attrs.setdefault("scope", "source")
        for name in ("subject", "message_id"):
            if scope == "project" and name in attrs:
                raise serializers.ValidationError(
                    {name: "A project rebuild takes no subject or message ID."}
                )
            if scope == "source" and not attrs.get(name):
                raise serializers.ValidationError(
                    {name: 'A source rebuild needs both; for all facts send {"scope": "project"}.'}
                )
        return attrs


class ProgressOut(serializers.Serializer):
    subjects_done = serializers.IntegerField()
    subjects_total = serializers.IntegerField()


class GenerationOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=REBUILD_KINDS)
    state = serializers.ChoiceField(choices=Generation.State.values)
    extractor_version = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    subject = serializers.CharField(required=False, help_text="A source rebuild's subject.")
    message_id = serializers.CharField(required=False, help_text="A source rebuild's message.")
    progress = ProgressOut()


class RebuildOut(serializers.Serializer):
    generation = GenerationOut()
    retired = serializers.IntegerField(help_text="Facts now `reinterpreted` by this generation.")
    admitted = serializers.IntegerField(help_text="Facts this generation admitted.")


def rebuild_body(generation: Generation) -> dict:
    """The answer of POST /v1/rebuilds and GET /v1/rebuilds/{id}, rendered by RebuildOut."""
    body = {
        "id": generation.pk,
        "kind": KIND_NAMES[generation.kind],
        "state": generation.state,
        "extractor_version": generation.extractor_version,
        "created_at": iso_utc(generation.created_at),
        "finished_at": iso_utc(generation.finished_at),
        "progress": {
            "subjects_done": generation.subjects_done,
            "subjects_total": generation.subjects_total,
        },
    }
    source = generation.source_observation
    if source is not None and source.erased_at is None:
        body["subject"] = source.subject.external_id
        body["message_id"] = source.message_id
    return RebuildOut(
        {"generation": body, "retired": generation.retired, "admitted": generation.admitted}
    ).data


class ErasureIn(serializers.Serializer):
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    message_id = StrictCharField(
        max_length=EXTERNAL_ID_MAX_LENGTH,
        required=False,
        help_text="Erase only this message of the subject.",
    )


class ErasedCountsOut(serializers.Serializer):
    observations = serializers.IntegerField()
    facts = serializers.IntegerField()


class ErasureOut(serializers.Serializer):
    erased = ErasedCountsOut()
