"""Request validation and the documented response shapes of the ledger routes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from attest.errors import InvalidRequest
from attest.fields import (
    WHITESPACE_CLASS,
    NoUnknownFields,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictListField,
    StrictUUIDField,
)
from citations.cursor import BadCursor, position_after
from citations.extract.intervals import STATUSES
from citations.models import (
    EXTERNAL_ID_MAX_LENGTH,
    PREDICATE_MAX_LENGTH,
    RETRACTION_REASON_MAX_CHARS,
    STATEMENT_MAX_CHARS,
    VALUE_KEY_MAX_LENGTH,
    ChangeType,
    EvidenceKind,
    Role,
)
from citations.selectors import (
    INVENTORY_DEFAULT_LIMIT,
    INVENTORY_MAX_LIMIT,
    MAX_OFFSET,
    RECALL_DEFAULT_LIMIT,
    RECALL_MAX,
    RESOLVE_DEFAULT_LIMIT,
    RESOLVE_MAX_LIMIT,
    InvalidCitation,
    iso_utc,
    resolve_scope,
)
from citations.selectors.changes import (
    CHANGES_DEFAULT_LIMIT,
    CHANGES_MAX_LIMIT,
    SUBJECTS_DEFAULT_LIMIT,
    SUBJECTS_MAX_LIMIT,
)
from citations.selectors.ranked import RANKED_DEFAULT_LIMIT, RANKED_MAX_LIMIT
from citations.selectors.web_evidence import REASONS, WebQuoteIn
from citations.services.authoring import MESSAGE_REASONS, AuthoredStatement, MessageQuoteIn
from citations.services.predicates import (
    DESCRIPTION_MAX_CHARS,
    MAX_SYNONYMS,
    NAME_PATTERN,
    NAME_RE,
    NAME_RULE,
    SYNONYM_MAX_CHARS,
)

MAX_WEB_EVIDENCE = 20
# As verify/quote takes a quote as sent; a receipt as attest_core.jws caps it.
MAX_RAW_QUOTE_CHARS = 20_000
MAX_RECEIPT_CHARS = 256 * 1024
# A fetch answer's text: the largest page the fetcher reads, normalised.
MAX_PAGE_TEXT_CHARS = 16 * 1024 * 1024

MAX_MESSAGES = 100
MAX_MESSAGE_BYTES = 1024 * 1024
# Clocks differ a little; a message "from the future" beyond this is refused.
CLOCK_SKEW = timedelta(minutes=5)


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


class MessageIn(NoUnknownFields):
    id = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    role = StrictChoiceField(choices=Role.values)
    text = StrictCharField(trim_whitespace=False)
    occurred_at = InstantField()
    session = StrictCharField(
        max_length=EXTERNAL_ID_MAX_LENGTH, required=False, allow_blank=True, default=""
    )
    ordinal = StrictIntegerField(min_value=0, max_value=2**31 - 1, required=False)

    def validate_text(self, value: str) -> str:
        # Text that is not Unicode never gets here: attest.parsers refuses it in any body.
        if len(value.encode("utf-8")) > MAX_MESSAGE_BYTES:
            raise serializers.ValidationError(f"A message is at most {MAX_MESSAGE_BYTES} bytes.")
        return value

    def validate_occurred_at(self, value):
        if value > timezone.now() + CLOCK_SKEW:
            raise serializers.ValidationError("occurred_at is in the future.")
        return value


class ObservationsIn(NoUnknownFields):
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    messages = StrictListField(
        child=MessageIn(),
        min_length=1,
        max_length=MAX_MESSAGES,
        help_text=f"1 to {MAX_MESSAGES} messages.",
    )

    def validate_messages(self, value: list[dict]) -> list[dict]:
        ids = [message["id"] for message in value]
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError("Message IDs must be unique within a request.")
        return value


class AsOf(NoUnknownFields):
    valid_at = InstantField(required=False)
    known_at = InstantField(required=False)


@extend_schema_field(
    {
        "oneOf": [
            {
                "type": "object",
                "properties": {"cursor": {"type": "string"}},
                "required": ["cursor"],
                "additionalProperties": False,
            },
            {"type": "string"},
        ],
        "description": (
            "The previous page's `next`, sent back unchanged (or its `cursor` string alone); "
            "anything else is a 400 with `details.field` `after`."
        ),
    }
)
class AfterField(serializers.JSONField):
    """The page cursor: read by the paging selectors, documented here."""


class RecallIn(NoUnknownFields):
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    predicate = StrictCharField(max_length=PREDICATE_MAX_LENGTH, required=False)
    query = StrictCharField(
        max_length=200,
        required=False,
        help_text=(
            "A question or words in plain language: the facts are ranked by full-text "
            "relevance (any of its words, stemmed; statement, value and the predicate's "
            "name, description and synonyms) and by what its question words ask for "
            "(where: a place; who: a person; when: a date), each with a `score`, best first."
        ),
    )
    as_of = AsOf(required=False)
    limit = StrictIntegerField(
        min_value=1,
        max_value=RECALL_MAX,
        required=False,
        help_text=(
            f"Facts a page: default {RECALL_DEFAULT_LIMIT}, at most {RECALL_MAX}; with "
            f"`query` default {RANKED_DEFAULT_LIMIT}, at most {RANKED_MAX_LIMIT}."
        ),
    )
    after = AfterField(required=False)

    def validate(self, attrs: dict) -> dict:
        ranked = bool(attrs.get("query"))
        most = RANKED_MAX_LIMIT if ranked else RECALL_MAX
        if attrs.get("limit", 0) > most:
            raise serializers.ValidationError({"limit": f"With query, at most {most}."})
        attrs.setdefault("limit", RANKED_DEFAULT_LIMIT if ranked else RECALL_DEFAULT_LIMIT)
        return attrs


class ResolveAsOf(NoUnknownFields):
    known_at = InstantField()


def _parse_id(raw: Any) -> uuid.UUID:
    if not isinstance(raw, str):
        raise InvalidCitation(details={"field": "id"})
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise InvalidCitation(details={"field": "id"}) from None


def _parse_limit(raw: Any) -> int:
    # Only a missing limit takes the default: null is a malformed number, like "8".
    if isinstance(raw, int) and not isinstance(raw, bool) and raw > RESOLVE_MAX_LIMIT:
        # Over the page's size: a malformed request like any list over its size.
        raise InvalidRequest(
            f"limit must be at most {RESOLVE_MAX_LIMIT}.",
            details={"field": "limit", "limit": RESOLVE_MAX_LIMIT, "count": raw},
        )
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= RESOLVE_MAX_LIMIT:
        raise InvalidCitation(
            f"limit must be a whole number from 1 to {RESOLVE_MAX_LIMIT}.",
            details={"field": "limit"},
        )
    return raw


def _parse_after(raw: Any, scope: str) -> int:
    try:
        position = position_after(raw, scope=scope, shape=(int,))
    except BadCursor:
        raise InvalidCitation(
            "after must be the next value of the previous page, unchanged.",
            details={"field": "after"},
        ) from None
    return 0 if position is None else position[0]


def _parse_known_at(raw: Any) -> datetime | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"known_at"}:
        raise InvalidCitation(
            'as_of must be an object with one field, "known_at".', details={"field": "as_of"}
        )
    value = raw.get("known_at")
    try:
        moment = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidCitation(
            "as_of.known_at must be a time with its offset, such as 2026-03-04T10:11:58Z.",
            details={"field": "as_of.known_at"},
        )
    try:
        moment.astimezone(UTC)
        offset = moment.utcoffset()
        assert offset is not None  # parse_datetime's tzinfo is a fixed offset
        in_range = abs(offset) <= MAX_OFFSET
    except OverflowError:
        in_range = False
    if not in_range:
        raise InvalidCitation(
            "as_of.known_at: the offset must be between -14:00 and +14:00 and the time "
            "within the years 1 to 9999 in UTC.",
            details={"field": "as_of.known_at"},
        )
    return moment


class ResolveIn(NoUnknownFields):
    """Resolve's body. A fault in the ID or the page parameters, a body that is no object
    too, is 400 invalid_citation naming the field at fault; a field resolve does not know
    is 400 invalid_request, as on every route."""

    # The docstring above is the published schema's description. The view parses the body
    # with this serializer: the declared fields are the schema, and run_validation reads
    # the body in the order id, limit, as_of, after, answering each fault as resolve must.

    id = StrictUUIDField()
    limit = StrictIntegerField(
        min_value=1, max_value=RESOLVE_MAX_LIMIT, default=RESOLVE_DEFAULT_LIMIT
    )
    after = AfterField(required=False)
    as_of = ResolveAsOf(
        required=False,
        help_text="The fact and its sources as the ledger believed them at `known_at`.",
    )

    def run_validation(self, data: Any = empty) -> dict[str, Any]:
        """``fact_id``, ``limit``, ``known_at`` (or None) and ``after`` (0 on page one)."""
        if not isinstance(data, dict):
            raise InvalidCitation()
        unknown = self.unknown_field(data)
        if unknown is not None:
            # A misplaced known_at (not under as_of) must not answer today's state. Not
            # the ID or a page parameter: refused as on every route.
            raise InvalidRequest(f"{unknown}: {self.unknown_field_message()}", field=unknown)
        fact_id = _parse_id(data.get("id"))
        limit = _parse_limit(data["limit"]) if "limit" in data else RESOLVE_DEFAULT_LIMIT
        known_at = _parse_known_at(data.get("as_of"))
        after = _parse_after(data.get("after"), resolve_scope(fact_id, known_at))
        return {"fact_id": fact_id, "limit": limit, "known_at": known_at, "after": after}


class StatementIn(NoUnknownFields):
    """A fact as a person states it (an authored record, or a correction's replacement)."""

    predicate = StrictCharField(
        max_length=PREDICATE_MAX_LENGTH,
        help_text="A built-in predicate or one the project declared (GET /v1/predicates).",
    )
    statement = StrictCharField(max_length=STATEMENT_MAX_CHARS)
    value = StrictCharField(
        max_length=VALUE_KEY_MAX_LENGTH,
        required=False,
        help_text="What the fact says, such as a city; by default the statement itself.",
    )
    valid_from = InstantField(required=False, help_text="Default: now.")
    valid_until = InstantField(required=False, help_text="Default: open.")
    role = StrictChoiceField(choices=Role.values, default=Role.USER)

    def validate(self, attrs):
        start, end = attrs.get("valid_from"), attrs.get("valid_until")
        if start is not None and end is not None and end <= start:
            raise serializers.ValidationError({"valid_until": "Must come after valid_from."})
        return attrs

    def statement_object(self) -> AuthoredStatement:
        return authored_statement(self.validated_data)


def authored_statement(data: dict) -> AuthoredStatement:
    return AuthoredStatement(
        predicate=data.get("predicate", ""),
        statement=data["statement"],
        value=data.get("value", ""),
        valid_from=data.get("valid_from"),
        valid_until=data.get("valid_until"),
        role=data["role"],
    )


class WebEvidenceIn(NoUnknownFields):
    """One piece of evidence: a quote of a stored message (``message_id``) or a quote
    Attest verified on a web page (``receipt``), one or the other."""

    message_id = StrictCharField(
        max_length=EXTERNAL_ID_MAX_LENGTH,
        required=False,
        help_text="Message evidence: the ID of a message of the same subject, already "
        "ingested; `quote` must occur in its text byte for byte (UTF-8).",
    )
    occurrence = StrictIntegerField(
        min_value=0,
        max_value=10_000,
        required=False,
        help_text="Message evidence: which copy of a repeated quote (0-based, default 0).",
    )
    receipt = StrictCharField(
        max_length=MAX_RECEIPT_CHARS,
        trim_whitespace=False,
        required=False,
        help_text="Web evidence: the `receipt` of a verify/quote, verify/quotes, "
        "verify/citations or fetch answer, unchanged.",
    )
    quote = StrictCharField(
        max_length=MAX_RAW_QUOTE_CHARS,
        trim_whitespace=False,
        help_text="Web evidence: the quote exactly as it was sent to verify (its SHA-256 must "
        "be the signed one). Message evidence: the exact words of the message.",
    )
    index = StrictIntegerField(
        min_value=0,
        max_value=MAX_WEB_EVIDENCE - 1,
        required=False,
        help_text="Web evidence: which result of a batch receipt (a citation or a quote, "
        "from 0; default 0).",
    )
    text = StrictCharField(
        max_length=MAX_PAGE_TEXT_CHARS,
        trim_whitespace=False,
        required=False,
        help_text="Fetch receipts only: the answer's `text`; the quote is looked up in it.",
    )

    def validate(self, attrs):
        if ("message_id" in attrs) == ("receipt" in attrs):
            raise serializers.ValidationError(
                {
                    "message_id": "Give `message_id` (message evidence) or `receipt` (web "
                    "evidence), one of the two."
                }
            )
        web_only = {"index", "text"} if "message_id" in attrs else {"occurrence"}
        for name in sorted(web_only & set(attrs)):
            raise serializers.ValidationError({name: "Not a field of this kind of evidence."})
        return attrs


WEB_EVIDENCE_HELP = (
    "Quotes that back the record, of stored messages (`message_id`) or verified on web "
    "pages (`receipt`), mixed freely. Each is checked before anything is written; a refusal "
    "is 400 `invalid_request` with `details.field` (such as `evidence[0].quote`) and "
    "`details.reason`: "
    + "; ".join(
        f"`{reason}`: {meaning}" for reason, meaning in {**MESSAGE_REASONS, **REASONS}.items()
    )
    + "."
)
# `extracted_by` is stored as `client:<extracted_by>` in the 64 characters of a version.
EXTRACTED_BY_MAX_CHARS = 64 - len("client:")


class CountedFirstListField(StrictListField):
    """A list over its size is refused before any member is read (and named as the list)."""

    def to_internal_value(self, data):
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class AuthoredFactIn(StatementIn):
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    statement = StrictCharField(
        max_length=STATEMENT_MAX_CHARS,
        required=False,
        help_text="The fact in words. Required unless `evidence` quotes a message: then "
        "the first quote by default.",
    )
    authored_by = StrictCharField(
        max_length=EXTERNAL_ID_MAX_LENGTH,
        required=False,
        help_text="Who states it: a name or handle. Required without `evidence`; with it, "
        "the credential's actor by default.",
    )
    extracted_by = StrictCharField(
        max_length=EXTRACTED_BY_MAX_CHARS,
        required=False,
        help_text="Message evidence: the extractor that read the fact (your model, a "
        "version), recorded as `extractor_version` `client:<extracted_by>`; default "
        "`client`.",
    )
    # A ListField, not many=True: drf-spectacular documents its max_length as maxItems.
    evidence = CountedFirstListField(
        child=WebEvidenceIn(),
        required=False,
        max_length=MAX_WEB_EVIDENCE,
        help_text=WEB_EVIDENCE_HELP,
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        evidence = attrs.get("evidence") or []
        if not attrs.get("authored_by") and not evidence:
            raise serializers.ValidationError(
                {"authored_by": "Say who states the record, or back it with `evidence`."}
            )
        quoting = any("message_id" in e for e in evidence)
        if not quoting and not attrs.get("statement"):
            raise serializers.ValidationError(
                {"statement": "This field is required (unless `evidence` quotes a message)."}
            )
        if "extracted_by" in attrs and not quoting:
            raise serializers.ValidationError(
                {"extracted_by": "Only with message evidence (`evidence` with `message_id`)."}
            )
        return attrs

    def statement_object(self) -> AuthoredStatement:
        return authored_statement({"statement": "", **self.validated_data})

    def web_evidence(self) -> list[WebQuoteIn]:
        return [
            WebQuoteIn(e["receipt"], e["quote"], e.get("index", 0), e.get("text"), position)
            for position, e in enumerate(self.validated_data.get("evidence", []))
            if "receipt" in e
        ]

    def message_evidence(self) -> list[MessageQuoteIn]:
        return [
            MessageQuoteIn(e["message_id"], e["quote"], e.get("occurrence", 0), position)
            for position, e in enumerate(self.validated_data.get("evidence", []))
            if "message_id" in e
        ]


class ReplacementIn(StatementIn):
    predicate = StrictCharField(
        max_length=PREDICATE_MAX_LENGTH, required=False, help_text="Default: the retracted fact's."
    )
    valid_from = InstantField(required=False, help_text="Default: the retracted fact's.")


class RetractIn(NoUnknownFields):
    reason = StrictCharField(
        max_length=RETRACTION_REASON_MAX_CHARS, help_text="Why the fact is withdrawn."
    )
    replacement = ReplacementIn(
        required=False, help_text="A correction: the fact that is true instead."
    )

    def replacement_object(self) -> AuthoredStatement | None:
        replacement = self.validated_data.get("replacement")
        return authored_statement(replacement) if replacement is not None else None


# --- responses: the views render the selectors' objects through these -------------


class UtcTimeField(serializers.DateTimeField):
    """An instant rendered in UTC with a Z, the form every ledger response uses."""

    def to_representation(self, value):
        return iso_utc(value)


class IntervalOut(serializers.Serializer):
    # "from" is a Python keyword, so the field is declared below.
    until = UtcTimeField(source="end", allow_null=True)
    from_inclusive = serializers.BooleanField(source="start_inclusive")
    until_inclusive = serializers.BooleanField(source="end_inclusive")
    from_precision = serializers.ChoiceField(
        source="precision", choices=["instant", "day", "week", "month", "year"], required=False
    )


IntervalOut._declared_fields["from"] = UtcTimeField(source="start")


class RetractionOut(serializers.Serializer):
    id = serializers.UUIDField()
    retracted_by = serializers.CharField(help_text="Who withdrew the fact.")
    retracted_at = UtcTimeField()
    reason = serializers.CharField(help_text="Why, as the person gave it.")
    replacement = serializers.UUIDField(
        source="replacement_id",
        allow_null=True,
        help_text="The ID of the fact that replaces it (a correction), or null.",
    )
    replacement_id = serializers.UUIDField(
        allow_null=True, help_text="The same ID as `replacement`, under its earlier name."
    )


class FactOut(serializers.Serializer):
    id = serializers.UUIDField()
    version = serializers.CharField(source="tag")
    subject = serializers.CharField(source="fact.subject.external_id")
    predicate = serializers.CharField(source="fact.predicate")
    value = serializers.CharField(source="fact.value")
    statement = serializers.CharField(source="fact.statement")
    source_role = serializers.CharField(source="fact.source_role")
    status = serializers.ChoiceField(choices=list(STATUSES))
    valid = IntervalOut()
    known = IntervalOut()
    superseded_by = serializers.UUIDField(source="version.superseded_by_id", allow_null=True)
    supersession_source_observation_id = serializers.UUIDField(
        source="version.supersession_source_observation_id", allow_null=True
    )
    retraction = RetractionOut(allow_null=True)
    generation = serializers.IntegerField(source="fact.generation_id")
    reinterpreted_by = serializers.IntegerField(
        source="version.reinterpreted_by_id", allow_null=True
    )


def _web(help_text: str) -> dict:
    return {"required": False, "help_text": f"Web evidence only: {help_text}"}


# Fields of a message's byte range, which web evidence (a quote on a page) has not.
MESSAGE_ONLY = ("byte_start", "byte_end", "context", "context_complete")
# Fields of a web quote's page and receipt.
WEB_ONLY = (
    "url",
    "final_url",
    "route",
    "match",
    "start",
    "end",
    "pdf_page",
    "pdf_page_end",
    "content_sha256",
    "normalised_sha256",
    "retrieved_at",
    "doi",
    "doi_status",
    "source_retracted",
    "receipt",
    "receipt_index",
    "receipt_log_index",
)


class EvidenceOut(serializers.Serializer):
    # The metaclass moves declared fields off the class; the stubs instead see these two
    # fields overriding Field.source and Field.context, hence the ignores below.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        source="evidence.kind",
        choices=EvidenceKind.values,
        help_text="`message` (extracted from a message), `authored` (an authored record's "
        "statement) or `web` (a quote verified on a web page, with its receipt).",
    )
    source_observation_id = serializers.UUIDField(
        source="observation.pk", help_text="For web evidence, the authored record's message."
    )
    source_message_id = serializers.CharField(source="observation.message_id")
    source_ordinal = serializers.IntegerField(source="observation.ordinal")
    role = serializers.CharField(source="observation.role")
    occurred_at = UtcTimeField(source="observation.occurred_at")
    quote = serializers.CharField(
        help_text="Re-read from the message bytes, or for web evidence the verified quote "
        "whose SHA-256 the receipt signs (both checked on every request)."
    )
    byte_start = serializers.IntegerField(
        source="evidence.byte_start", required=False, help_text="Message evidence only."
    )
    byte_end = serializers.IntegerField(
        source="evidence.byte_end", required=False, help_text="Message evidence only."
    )
    context = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text="Message evidence only."
    )
    context_complete = serializers.BooleanField(required=False, help_text="Message evidence only.")
    extractor_version = serializers.CharField(source="evidence.extractor_version")
    authored_by = serializers.CharField(
        source="evidence.authored_by",
        required=False,
        help_text="Present only on evidence a person wrote directly (an authored record) "
        "and on the web evidence it brought in.",
    )
    url = serializers.CharField(source="web.url", **_web("the URL that was verified."))
    final_url = serializers.CharField(
        source="web.final_url", **_web("where redirects ended, as signed.")
    )
    route = serializers.CharField(source="web.route", **_web("the route that issued the receipt."))
    match = serializers.ChoiceField(
        source="web.match", choices=["exact", "fuzzy"], **_web("the signed verdict.")
    )
    start = serializers.IntegerField(
        source="web.start", **_web("code-point offset of the match in the page's normalised text.")
    )
    end = serializers.IntegerField(source="web.end", **_web("end of the match (exclusive)."))
    pdf_page = serializers.IntegerField(
        source="web.pdf_page", allow_null=True, **_web("the PDF page the match starts on.")
    )
    pdf_page_end = serializers.IntegerField(
        source="web.pdf_page_end", allow_null=True, **_web("the PDF page it ends on.")
    )
    content_sha256 = serializers.CharField(
        source="web.content_sha256", **_web("SHA-256 of the bytes fetched.")
    )
    normalised_sha256 = serializers.CharField(
        source="web.normalised_sha256", **_web("SHA-256 of the page's normalised text.")
    )
    retrieved_at = UtcTimeField(
        source="web.retrieved_at", **_web("when the page was verified (the receipt's time).")
    )
    doi = serializers.CharField(source="web.doi", **_web("the page's DOI, or empty."))
    doi_status = serializers.CharField(
        source="web.doi_status", **_web("Crossref's status of the DOI as signed, or empty.")
    )
    source_retracted = serializers.BooleanField(
        **_web(
            "true when the latest Crossref answer for the DOI (a lookup after the receipt, "
            "or else the signed one) says the paper is retracted."
        )
    )
    receipt = serializers.CharField(
        source="web.receipt", **_web("the receipt, unchanged: check it offline.")
    )
    receipt_index = serializers.IntegerField(
        source="web.receipt_index", **_web("which result of the receipt is this quote.")
    )
    receipt_log_index = serializers.IntegerField(
        source="web.receipt_log_index",
        allow_null=True,
        **_web(
            "the receipt's leaf in the transparency log (`GET /v1/log/proof?index=`); null "
            "for a receipt signed before the log began."
        ),
    )

    def to_representation(self, instance):
        body = super().to_representation(instance)
        if not body.get("authored_by"):
            body.pop("authored_by", None)
        if body["source"] == EvidenceKind.WEB:
            for name in MESSAGE_ONLY:
                body.pop(name, None)
        else:
            for name in WEB_ONLY:
                body.pop(name, None)
        return body


class CursorOut(serializers.Serializer):
    cursor = serializers.CharField()


class ResolveOut(FactOut):
    evidence = EvidenceOut(many=True)
    next = CursorOut(required=False, help_text="Send back unchanged as `after`; absent at the end.")

    def to_representation(self, instance):
        body = super().to_representation(instance)
        if body.get("next") is None:
            body.pop("next", None)
        return body


class ObservationOut(serializers.Serializer):
    id = serializers.UUIDField(source="observation.pk")
    message_id = serializers.CharField(source="observation.message_id")
    subject = serializers.CharField()
    role = serializers.CharField(source="observation.role")
    occurred_at = UtcTimeField(source="observation.occurred_at")
    received_at = UtcTimeField(source="observation.received_at")
    sha256 = serializers.CharField(source="observation.content_sha256")
    bytes = serializers.SerializerMethodField()
    session = serializers.CharField(source="observation.session")
    ordinal = serializers.IntegerField(source="observation.ordinal")
    created = serializers.BooleanField(help_text="False when the message ID was already stored.")

    def get_bytes(self, item) -> int:
        return len(item.observation.content)


class IngestedFactOut(serializers.Serializer):
    id = serializers.UUIDField(source="fact.pk")
    predicate = serializers.CharField(source="fact.predicate")
    value = serializers.CharField(source="fact.value")
    statement = serializers.CharField(source="fact.statement")
    status = serializers.ChoiceField(choices=list(STATUSES))
    change = serializers.ChoiceField(choices=["created", "evidence_added", "validity_closed"])


class ObservationsOut(serializers.Serializer):
    observations = ObservationOut(many=True)
    facts = IngestedFactOut(many=True)


class FactPageOut(serializers.Serializer):
    facts = FactOut(many=True)
    next = CursorOut(
        required=False, help_text="Send back unchanged as `after`; absent on the last page."
    )

    def to_representation(self, instance):
        body = super().to_representation(instance)
        if body.get("next") is None:
            body.pop("next", None)
        return body


class RecalledFactOut(FactOut):
    score = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="With `query` only: relevance from 0 to 1, the facts highest first.",
    )


class RecallOut(FactPageOut):
    facts = RecalledFactOut(many=True)


class InventoryOut(FactPageOut):
    pass


class DigitsField(serializers.CharField):
    """A whole number written in a query string: digits only, so "5.0" and "1e3" are refused."""

    default_error_messages = {"invalid": "A whole number is required."}

    def __init__(self, *, min_value: int, max_value: int, **kwargs):
        self.min_value, self.max_value = min_value, max_value
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        if not text.isascii() or not text.isdigit():
            self.fail("invalid")
        value = int(text)
        if not self.min_value <= value <= self.max_value:
            raise serializers.ValidationError(f"Must be from {self.min_value} to {self.max_value}.")
        return value


class DigitsFieldSchema(OpenApiSerializerFieldExtension):
    """A query-string integer with its range, so a schema reader knows 0 and 201 are refused."""

    target_class = DigitsField

    def map_serializer_field(self, auto_schema, direction):
        return {
            "type": "integer",
            "minimum": self.target.min_value,
            "maximum": self.target.max_value,
        }


class InventoryQuery(serializers.Serializer):
    """The query string of GET /v1/facts; a parameter it does not know is refused."""

    # Strict only for the schema: its pattern says a value of white space alone is blank.
    subject = StrictCharField(max_length=EXTERNAL_ID_MAX_LENGTH, required=False)
    predicate = StrictCharField(max_length=PREDICATE_MAX_LENGTH, required=False)
    status = StrictChoiceField(choices=list(STATUSES), required=False)
    limit = DigitsField(
        min_value=1,
        max_value=INVENTORY_MAX_LIMIT,
        required=False,
        help_text=f"Default {INVENTORY_DEFAULT_LIMIT}.",
    )
    after = StrictCharField(
        required=False, help_text="The previous page's `next.cursor`, unchanged."
    )

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {unknown[0]: f"unknown parameter; the parameters are {', '.join(self.fields)}."}
            )
        repeated = [name for name in self.fields if len(data.getlist(name)) > 1]
        if repeated:
            raise serializers.ValidationError({repeated[0]: "Give this parameter once."})
        # DRF reads "predicate=" as an absent optional parameter; the schema says a value.
        blank = [name for name in self.fields if data.get(name) == ""]
        if blank:
            raise serializers.ValidationError({blank[0]: "Give a value, or leave it out."})
        return super().to_internal_value(data)


# --- predicates ---------------------------------------------------------------


class PredicateIn(NoUnknownFields):
    name = StrictCharField(
        max_length=PREDICATE_MAX_LENGTH,
        # Not trimmed: the schema's maxLength and pattern then hold for the string as sent.
        trim_whitespace=False,
        pattern=NAME_RE.pattern,
        pattern_message=NAME_RULE,
        help_text=f"Matches `{NAME_PATTERN}`.",
    )
    cardinality = StrictChoiceField(
        choices=["one", "many"],
        help_text="`one`: a new value supersedes the old; `many`: values accumulate.",
    )
    description = StrictCharField(
        max_length=DESCRIPTION_MAX_CHARS, required=False, allow_blank=True
    )
    synonyms = serializers.ListField(
        child=StrictCharField(
            max_length=SYNONYM_MAX_CHARS,
            # Not trimmed, so maxLength counts what is sent, as the schema says.
            trim_whitespace=False,
            # One line, not blank: the rule predicate_declare applies, stated in the schema.
            pattern=rf"[^\n\x00]*[^\n\x00{WHITESPACE_CLASS}][^\n\x00]*",
            pattern_message=(
                f"a word or phrase of 1 to {SYNONYM_MAX_CHARS} characters on one line."
            ),
        ),
        max_length=MAX_SYNONYMS,
        required=False,
        help_text=(
            f"Up to {MAX_SYNONYMS} words or short phrases a question may use for it, "
            "indexed with each of its facts for ranked recall."
        ),
    )


class PredicateOut(serializers.Serializer):
    name = serializers.CharField()
    cardinality = serializers.ChoiceField(choices=["one", "many"])
    builtin = serializers.BooleanField(help_text="Read by the built-in extractor.")
    description = serializers.CharField()
    synonyms = serializers.ListField(
        child=serializers.CharField(),
        help_text="Words a question may use for it; ranked recall searches them.",
    )


class PredicatesOut(serializers.Serializer):
    predicates = PredicateOut(many=True, help_text="The built-ins first, then the declared.")


# --- the change feed and the subjects -------------------------------------------


class ChangesIn(NoUnknownFields):
    subject = StrictCharField(
        max_length=EXTERNAL_ID_MAX_LENGTH,
        required=False,
        help_text="One subject's changes only (an unknown or erased subject has none).",
    )
    limit = StrictIntegerField(
        min_value=1,
        max_value=CHANGES_MAX_LIMIT,
        default=CHANGES_DEFAULT_LIMIT,
        help_text=f"Changes a page: default {CHANGES_DEFAULT_LIMIT}, at most {CHANGES_MAX_LIMIT}.",
    )
    after = AfterField(required=False)


class ChangeOut(serializers.Serializer):
    id = serializers.IntegerField(
        help_text="The change's place in the project's commit order: later changes are larger."
    )
    type = serializers.ChoiceField(choices=ChangeType.values)
    fact_id = serializers.UUIDField()
    subject = serializers.CharField(
        allow_null=True, help_text="Null once the subject is erased: it names no one then."
    )
    predicate = serializers.CharField(allow_null=True, help_text="Null once the fact is erased.")
    at = UtcTimeField(help_text="When the ledger learned it (known time).")


class ChangesOut(serializers.Serializer):
    changes = ChangeOut(many=True)
    next = CursorOut(
        required=False,
        help_text=(
            "After this page's last change: send back unchanged as `after`, now or later. "
            "Absent when the page has no changes (ask again with the same `after`)."
        ),
    )

    def to_representation(self, instance):
        body = super().to_representation(instance)
        if body.get("next") is None:
            body.pop("next", None)
        return body


class SubjectsQuery(InventoryQuery):
    """The query string of GET /v1/subjects; a parameter it does not know is refused."""

    subject = None  # type: ignore[assignment]
    predicate = None  # type: ignore[assignment]
    status = None  # type: ignore[assignment]
    limit = DigitsField(
        min_value=1,
        max_value=SUBJECTS_MAX_LIMIT,
        required=False,
        help_text=f"Default {SUBJECTS_DEFAULT_LIMIT}.",
    )


class SubjectOut(serializers.Serializer):
    subject = serializers.CharField()
    facts = serializers.IntegerField(help_text="Its facts not erased, whatever their status.")
    last_observed_at = UtcTimeField(
        allow_null=True, help_text="When its latest message was sent; null if none."
    )


class SubjectsOut(serializers.Serializer):
    subjects = SubjectOut(many=True)
    next = CursorOut(
        required=False, help_text="Send back unchanged as `after`; absent on the last page."
    )

    def to_representation(self, instance):
        body = super().to_representation(instance)
        if body.get("next") is None:
            body.pop("next", None)
        return body
