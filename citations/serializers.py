"""Request validation and the documented response shapes of the ledger routes."""

from __future__ import annotations

from datetime import UTC, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from attest.fields import StrictCharField, StrictChoiceField, StrictIntegerField, StrictUUIDField
from citations.extract.extractor import PREDICATES
from citations.models import Role

MAX_MESSAGES = 100
MAX_MESSAGE_BYTES = 1024 * 1024
# Clocks differ a little; a message "from the future" beyond this is refused.
CLOCK_SKEW = timedelta(minutes=5)
MAX_OFFSET = timedelta(hours=14)


class InstantField(serializers.DateTimeField):
    """An RFC 3339 time with its offset: a time without one names no single instant."""

    default_error_messages = {
        "naive": "Give the time with its offset, such as 2026-03-04T10:11:58Z.",
        "offset": "The offset must be between -14:00 and +14:00, as every time zone's is.",
        "range": "The time must be within the years 1 to 9999 in UTC.",
    }

    def enforce_timezone(self, value):
        # Keep the sender's offset (the parent converts to UTC): relative dates in the
        # message are read on the sender's calendar.
        if timezone.is_aware(value):
            return value
        return super().enforce_timezone(value)

    def to_internal_value(self, value):
        try:
            parsed = parse_datetime(value.strip()) if isinstance(value, str) else None
        except ValueError:  # "2026-13-01T00:00Z": the parent refuses it as invalid
            parsed = None
        if parsed is not None and parsed.tzinfo is None:
            self.fail("naive")
        instant = super().to_internal_value(value)
        # PostgreSQL refuses an offset past 15:59, and no zone has one past 14:00.
        if abs(instant.utcoffset()) > MAX_OFFSET:
            self.fail("offset")
        try:
            instant.astimezone(UTC)  # stored and shown in UTC, where year 1 may become 0
        except OverflowError:
            self.fail("range")
        return instant


class MessageIn(serializers.Serializer):
    id = StrictCharField(max_length=200)
    role = StrictChoiceField(choices=Role.values)
    text = StrictCharField(trim_whitespace=False)
    occurred_at = InstantField()
    session = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    ordinal = StrictIntegerField(min_value=0, max_value=2**31 - 1, required=False)

    def validate_text(self, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
            raise serializers.ValidationError(f"A message is at most {MAX_MESSAGE_BYTES} bytes.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise serializers.ValidationError("The text is not valid Unicode.") from None
        return value

    def validate_occurred_at(self, value):
        if value > timezone.now() + CLOCK_SKEW:
            raise serializers.ValidationError("occurred_at is in the future.")
        return value


class ObservationsIn(serializers.Serializer):
    subject = StrictCharField(max_length=200)
    messages = serializers.ListField(
        child=MessageIn(), min_length=1, max_length=MAX_MESSAGES, help_text="1 to 100 messages."
    )

    def validate_messages(self, value: list[dict]) -> list[dict]:
        ids = [message["id"] for message in value]
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError("Message IDs must be unique within a request.")
        return value


class AsOf(serializers.Serializer):
    valid_at = InstantField(required=False)
    known_at = InstantField(required=False)


class RecallIn(serializers.Serializer):
    subject = StrictCharField(max_length=200)
    predicate = StrictChoiceField(choices=sorted(PREDICATES), required=False)
    query = StrictCharField(max_length=200, required=False)
    as_of = AsOf(required=False)
    limit = StrictIntegerField(min_value=1, max_value=200, default=50)


@extend_schema_field(
    {
        "oneOf": [
            {
                "type": "object",
                "properties": {"cursor": {"type": "string"}},
                "required": ["cursor"],
            },
            {"type": "string"},
        ],
        "description": (
            "The previous page's `next`, sent back unchanged (or its `cursor` string alone); "
            "anything else is `400 invalid_citation`."
        ),
    }
)
class AfterField(serializers.JSONField):
    """The page cursor: read by the resolve selector, documented here."""


class ResolveIn(serializers.Serializer):
    """Documentation only: resolve parses its own input so every fault is invalid_citation."""

    id = StrictUUIDField()
    limit = StrictIntegerField(min_value=1, max_value=32, default=8)
    after = AfterField(required=False)


# --- responses (documentation of the shapes the selectors build) -------------


class IntervalOut(serializers.Serializer):
    # "from" is a Python keyword, so the field is declared below.
    until = serializers.DateTimeField(allow_null=True)
    from_inclusive = serializers.BooleanField()
    until_inclusive = serializers.BooleanField()
    from_precision = serializers.ChoiceField(
        choices=["instant", "day", "week", "month", "year"], required=False
    )


IntervalOut._declared_fields["from"] = serializers.DateTimeField()


class RetractionOut(serializers.Serializer):
    id = serializers.UUIDField()
    retracted_by = serializers.CharField()
    retracted_at = serializers.DateTimeField()
    replacement_id = serializers.UUIDField(allow_null=True)


class FactOut(serializers.Serializer):
    id = serializers.UUIDField()
    version = serializers.CharField()
    subject = serializers.CharField()
    predicate = serializers.CharField()
    value = serializers.CharField()
    statement = serializers.CharField()
    source_role = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["current", "validity_closed", "knowledge_closed", "retracted", "reinterpreted"]
    )
    valid = IntervalOut()
    known = IntervalOut()
    superseded_by = serializers.UUIDField(allow_null=True)
    supersession_source_observation_id = serializers.UUIDField(allow_null=True)
    retraction = RetractionOut(allow_null=True)
    generation = serializers.IntegerField()
    reinterpreted_by = serializers.IntegerField(allow_null=True)


class EvidenceOut(serializers.Serializer):
    source_observation_id = serializers.UUIDField()
    source_message_id = serializers.CharField()
    source_ordinal = serializers.IntegerField()
    role = serializers.CharField()
    occurred_at = InstantField()
    quote = serializers.CharField()
    byte_start = serializers.IntegerField()
    byte_end = serializers.IntegerField()
    context = serializers.CharField()
    context_complete = serializers.BooleanField()
    extractor_version = serializers.CharField()
    authored_by = serializers.CharField(required=False)


class CursorOut(serializers.Serializer):
    cursor = serializers.CharField()


class ResolveOut(FactOut):
    evidence = EvidenceOut(many=True)
    next = CursorOut(required=False, help_text="Send back unchanged as `after`; absent at the end.")


class ObservationOut(serializers.Serializer):
    id = serializers.UUIDField()
    message_id = serializers.CharField()
    subject = serializers.CharField()
    role = serializers.CharField()
    occurred_at = InstantField()
    received_at = serializers.DateTimeField()
    sha256 = serializers.CharField()
    bytes = serializers.IntegerField()
    session = serializers.CharField()
    ordinal = serializers.IntegerField()
    created = serializers.BooleanField(help_text="False when the message ID was already stored.")


class IngestedFactOut(serializers.Serializer):
    id = serializers.UUIDField()
    predicate = serializers.CharField()
    value = serializers.CharField()
    statement = serializers.CharField()
    status = serializers.CharField()
    change = serializers.ChoiceField(choices=["created", "evidence_added", "validity_closed"])


class ObservationsOut(serializers.Serializer):
    observations = ObservationOut(many=True)
    facts = IngestedFactOut(many=True)


class RecallOut(serializers.Serializer):
    facts = FactOut(many=True)
