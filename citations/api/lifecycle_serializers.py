"""Request and response shapes of the ledger's lifecycle routes: rebuilds, erasure, export."""

from __future__ import annotations

from rest_framework import serializers

from attest.fields import NoUnknownFields, StrictCharField, StrictChoiceField
from citations.api.serializers import UtcTimeField
from citations.models import EXTERNAL_ID_MAX_LENGTH, Generation
from citations.services.rebuilds import KIND_NAMES, REBUILD_KINDS


class RebuildIn(NoUnknownFields):
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


class RebuildKindField(serializers.ChoiceField):
    # A generation's kind by the name the API gives it (source, project).

    def to_representation(self, value: str) -> str:
        return KIND_NAMES[value]


class GenerationOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    kind = RebuildKindField(choices=REBUILD_KINDS)
    state = serializers.ChoiceField(choices=Generation.State.values)
    extractor_version = serializers.CharField()
    created_at = UtcTimeField()
    finished_at = UtcTimeField(allow_null=True)
    # Left out when the rebuild's message has been erased since (live_source is None).
    subject = serializers.CharField(
        source="live_source.subject.external_id",
        required=False,
        help_text="A source rebuild's subject.",
    )
    message_id = serializers.CharField(
        source="live_source.message_id", required=False, help_text="A source rebuild's message."
    )
    progress = ProgressOut(source="*")


# Renders a Generation: the answer of POST /v1/rebuilds and GET /v1/rebuilds/{id}.
class RebuildOut(serializers.Serializer):
    generation = GenerationOut(source="*")
    retired = serializers.IntegerField(help_text="Facts now `reinterpreted` by this generation.")
    admitted = serializers.IntegerField(help_text="Facts this generation admitted.")


class ErasureIn(NoUnknownFields):
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    message_id = StrictCharField(
        max_length=EXTERNAL_ID_MAX_LENGTH,
        required=False,
        help_text="Erase only this message of the subject.",
    )


class ErasedCountsOut(serializers.Serializer):
    observations = serializers.IntegerField()
    facts = serializers.IntegerField()


# Renders an erasure's counts (citations.services.erasure.Erased).
class ErasureOut(serializers.Serializer):
    erased = ErasedCountsOut(source="*")
