"""Request validation and the documented response shapes of the verification routes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils.serializer_helpers import ReturnDict

from attest.errors import InvalidRequest
from attest.fields import (
    NOT_BLANK_PATTERN,
    ExampleDictField,
    NoUnknownFields,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictListField,
)
from attest.rendering import rendered
from verification.crossref.lookups import (
    BUSY,
    FOUND,
    NOT_FOUND,
    RATE_LIMITED,
    SKIPPED,
    TIMEOUT,
    UNAVAILABLE,
)
from verification.engine.classify import CONTENT_KINDS
from verification.network.addresses import MAX_URL_LENGTH, InvalidURL, parse_url
from verification.pipeline.batches import MAX_CITATIONS, MAX_QUOTES, check_batch_size
from verification.pipeline.steps import MAX_QUOTE_CHARS, MODES, VERDICTS, normalised_quote

# A raw quote this long cannot normalise down to 1,000 characters in any sensible
# request; refusing it early keeps normalisation cheap.
MAX_RAW_QUOTE_CHARS = 20_000


# What the schema promises every URL of this shape passes: an http(s) scheme, a host of
# letters, digits, dots and hyphens (or an IPv4 address), a port, a path of printable
# ASCII. The parser accepts more (IDN hosts, IPv6 literals), which the description says.
URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9](?:[A-Za-z0-9.-]{0,250}[A-Za-z0-9])?"
    r"(?::[1-9][0-9]{0,3})?(?:[/?#][!-~]*)?$"
)


class URLField(StrictCharField):
    """An http(s) URL of at most 2,048 characters that the fetcher can fetch as written."""

    def schema_pattern(self) -> str:
        return URL_PATTERN

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", f"http or https URL, at most {MAX_URL_LENGTH:,} characters.")
        super().__init__(max_length=MAX_URL_LENGTH, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            parse_url(value)
        except InvalidURL as exc:
            raise serializers.ValidationError(str(exc)) from None
        # The fetch never sends URL credentials, so accepting them would check a different
        # page than the one asked for, and keep a secret in the verification records.
        if "@" in urlsplit(value.strip()).netloc:
            raise serializers.ValidationError(
                "A URL with a user name or password cannot be fetched; remove them."
            )
        return value


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_RAW_QUOTE_CHARS,
        "pattern": NOT_BLANK_PATTERN,
        "description": f"At most {MAX_QUOTE_CHARS:,} characters after normalisation; "
        f"{MAX_RAW_QUOTE_CHARS:,} as sent.",
    }
)
class QuoteField(StrictCharField):
    """A quote: at most 1,000 characters after normalisation and 20,000 as sent.

    The raw text may be longer (white space runs and invisible characters normalise away),
    up to a hard 20,000 characters that keeps normalisation cheap.
    """

    def __init__(self, **kwargs):
        super().__init__(max_length=MAX_RAW_QUOTE_CHARS, trim_whitespace=False, **kwargs)


def quote_field(**kwargs) -> QuoteField:
    return QuoteField(**kwargs)


class MatchOptionsInput(NoUnknownFields):
    """The matching options every verify route takes."""

    match = StrictChoiceField(choices=MODES, default="fuzzy")
    case_sensitive = StrictBooleanField(default=False)
    threshold = StrictFloatField(min_value=0.5, max_value=1.0, default=0.9)

    def validate(self, attrs: dict) -> dict:
        if attrs["match"] == "passages" and attrs["case_sensitive"]:
            raise InvalidRequest(
                'case_sensitive: must be false with "match": "passages".', field="case_sensitive"
            )
        return attrs


class VerifyQuoteInput(MatchOptionsInput):
    url = URLField()
    quote = quote_field(
        help_text=(
            "Text to look for (with passages, the claim to find support for); at most "
            f"{MAX_QUOTE_CHARS:,} characters after normalisation."
        ),
    )

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        # Checked here, before any work; the service normalises the quote again itself.
        normalised_quote(attrs["quote"], mode=attrs["match"])
        return attrs


class CitationInput(NoUnknownFields):
    url = URLField()
    quote = quote_field(help_text=f"At most {MAX_QUOTE_CHARS:,} characters after normalisation.")


class BatchSizeChecked(MatchOptionsInput):
    """Counts the batch before reading its members: an oversized one is refused unread."""

    batch_field = ""
    batch_limit = 0
    batch_noun = ""

    def to_internal_value(self, data):
        members = data.get(self.batch_field) if isinstance(data, dict) else None
        if isinstance(members, list):
            check_batch_size(
                len(members),
                limit=self.batch_limit,
                noun=self.batch_noun,
                field_name=self.batch_field,
            )
        return super().to_internal_value(data)


class VerifyCitationsInput(BatchSizeChecked):
    batch_field, batch_limit, batch_noun = "citations", MAX_CITATIONS, "citations"

    citations = StrictListField(
        child=CitationInput(),
        min_length=1,
        max_length=MAX_CITATIONS,
        help_text=f"1 to {MAX_CITATIONS} objects {{url, quote}}; more is 400 invalid_request.",
    )


class VerifyQuotesInput(BatchSizeChecked):
    batch_field, batch_limit, batch_noun = "quotes", MAX_QUOTES, "quotes"

    url = URLField()
    quotes = StrictListField(
        child=quote_field(),
        min_length=1,
        max_length=MAX_QUOTES,
        help_text=f"1 to {MAX_QUOTES} quotes on the one page; more is 400 invalid_request.",
    )


class FetchInput(NoUnknownFields):
    url = URLField()


class AnswerDrift(Exception):
    """An answer that its output serializer (and so the schema) does not describe."""


# An answer rendered through its declared fields, so the schema is what is sent. Every key
# must be a declared field, every required field present, and a null only where the field
# allows it; anything else is a bug, raised (a 500), never a key dropped or invented. Each
# value is rendered by its field, in the order the fields are declared (the schema's
# property order), which is the order the answers have always listed their keys in. (A
# comment, not a docstring: the schema would show a base class's docstring as every
# answer's description.)
class AnswerOutput(serializers.Serializer):
    @classmethod
    def render(cls, answer: Mapping[str, Any]) -> ReturnDict:
        """``cls(answer).data``, from an instance kept per process (attest.rendering)."""
        return rendered(cls, answer)

    def to_representation(self, instance: Mapping[str, Any]) -> dict[str, Any]:
        fields = self.fields
        unknown = [name for name in instance if name not in fields]
        missing = [
            name for name, field in fields.items() if field.required and name not in instance
        ]
        if unknown or missing:
            raise AnswerDrift(
                f"{type(self).__name__}: undeclared {unknown}, required but absent {missing}"
            )
        body: dict[str, Any] = {}
        for name, field in fields.items():
            if name not in instance:
                continue
            value = instance[name]
            if value is None:
                if not field.allow_null:
                    raise AnswerDrift(f"{type(self).__name__}.{name}: null, not allowed")
                body[name] = None
            else:
                body[name] = field.to_representation(value)
        return body


class PassageOutput(AnswerOutput):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    score = serializers.FloatField()
    text = serializers.CharField()
    missing = serializers.ListField(child=serializers.CharField())
    flags = serializers.ListField(child=serializers.CharField())
    pdf_page = serializers.IntegerField(required=False)
    pdf_page_end = serializers.IntegerField(required=False)


class ResultOutput(AnswerOutput):
    match = serializers.ChoiceField(choices=VERDICTS)
    score = serializers.FloatField(allow_null=True)
    start = serializers.IntegerField(
        allow_null=True, help_text="Code-point offset, normalised text."
    )
    end = serializers.IntegerField(allow_null=True)
    # The metaclass moves declared fields off the class; the stubs see a field named
    # context (or source, in NoticeOutput) as overriding Field's attribute: the ignores.
    context = serializers.CharField(allow_null=True)  # type: ignore[assignment]
    occurrences = serializers.IntegerField()
    # A passages result's own fields come before the page hash, as its answer lists them.
    passages = PassageOutput(many=True, required=False)
    scorer = serializers.CharField(required=False)
    note = serializers.CharField(required=False)
    normalised_sha256 = serializers.CharField(allow_null=True)
    pdf_page = serializers.IntegerField(required=False, help_text="1-based, PDFs only.")
    pdf_page_end = serializers.IntegerField(required=False)


class PdfOutput(AnswerOutput):
    page_count = serializers.IntegerField()
    pages_read = serializers.IntegerField()
    truncated = serializers.BooleanField()


class NoticeOutput(AnswerOutput):
    type = serializers.CharField(
        help_text="retraction, withdrawal, removal, correction, expression_of_concern, ..."
    )
    doi = serializers.CharField(help_text="The notice's own DOI.")
    source = serializers.CharField(  # type: ignore[assignment]
        allow_null=True, help_text="Who reported it: publisher or retraction-watch."
    )
    date = serializers.CharField(allow_null=True, help_text="As precise as Crossref gives it.")


class CrossrefOutput(AnswerOutput):
    """What Crossref says about the page's DOI; the work's fields only when found."""

    doi = serializers.CharField()
    doi_source = serializers.ChoiceField(
        choices=["url", "page"],
        help_text="url: a doi.org link or the URL's path; page: the page's own meta tag.",
    )
    status = serializers.ChoiceField(choices=[FOUND, NOT_FOUND, SKIPPED])
    reason = serializers.ChoiceField(
        choices=[RATE_LIMITED, BUSY, TIMEOUT, UNAVAILABLE],
        allow_null=True,
        help_text="Why a lookup was skipped; null otherwise. A skip never changes the charge.",
    )
    retracted = serializers.BooleanField(
        allow_null=True,
        help_text="True when Crossref lists a retraction, withdrawal or removal notice; "
        "null when not found or skipped (unknown).",
    )
    title = serializers.CharField(allow_null=True, required=False)
    authors = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="At most 10, in order."
    )
    authors_total = serializers.IntegerField(required=False)
    year = serializers.IntegerField(allow_null=True, required=False)
    container_title = serializers.CharField(
        allow_null=True, required=False, help_text="The journal or book."
    )
    type = serializers.CharField(allow_null=True, required=False)
    updates = NoticeOutput(many=True, required=False, help_text="Every notice updating the work.")
    update_to = NoticeOutput(
        many=True,
        allow_null=True,
        required=False,
        help_text="What the cited DOI updates when it is itself a notice; null otherwise.",
    )


class PageOutput(AnswerOutput):
    requested_url = serializers.CharField()
    final_url = serializers.CharField(
        allow_null=True, help_text="null in a batch when the host name does not resolve."
    )
    http_status = serializers.IntegerField(allow_null=True)
    content_kind = serializers.ChoiceField(choices=CONTENT_KINDS)
    signals = serializers.ListField(child=serializers.CharField())
    title = serializers.CharField(allow_null=True)
    content_sha256 = serializers.CharField(allow_null=True)
    retrieved_at = serializers.DateTimeField()
    doi = serializers.CharField(allow_null=True)
    pdf = PdfOutput(required=False)
    crossref = CrossrefOutput(
        required=False, help_text="Pages with a DOI, when DOI lookups are on (Crossref)."
    )


class VerifyQuoteOutput(AnswerOutput):
    result = ResultOutput()
    page = PageOutput()
    injection_flags = serializers.ListField(child=serializers.CharField())
    advice = serializers.CharField()
    receipt = serializers.CharField(
        help_text="Compact JWS (EdDSA); check it at /v1/receipt/verify."
    )
    receipt_log_index = serializers.IntegerField(
        min_value=0,
        help_text="The receipt's leaf index in the transparency log (GET /v1/log/proof).",
    )
    tier = serializers.ChoiceField(choices=["trial", "paid", "sample"])
    rail = serializers.CharField(
        required=False, help_text='"x402" or "credit" (prepaid), on paid calls only.'
    )
    network = serializers.CharField(
        required=False,
        help_text="Calls paid over x402 only: CAIP-2 network of the payment, e.g. eip155:84532.",
    )
    trial_calls_left = serializers.IntegerField(
        required=False, help_text="Trial calls only: free calls this caller has left today."
    )


class ReceiptOutput(AnswerOutput):
    """The fields every priced answer ends with."""

    # Its receipt and tier; then (PaymentOutput) what the payment or the trial adds.

    receipt = serializers.CharField(
        help_text="Compact JWS (EdDSA); check it at /v1/receipt/verify."
    )
    receipt_log_index = serializers.IntegerField(
        min_value=0,
        help_text="The receipt's leaf index in the transparency log (GET /v1/log/proof).",
    )
    tier = serializers.ChoiceField(choices=["trial", "paid", "sample"])


# What @priced adds last to a priced answer: the rail and network, or the trial's count.
# (Comments, not docstrings, on these parts: the schema shows a base's docstring as the
# description of every answer built from it.)
class PaymentOutput(AnswerOutput):
    rail = serializers.CharField(
        required=False, help_text='"x402" or "credit" (prepaid), on paid calls.'
    )
    network = serializers.CharField(
        required=False, help_text="Calls paid over x402 only: CAIP-2 network of the payment."
    )
    trial_calls_left = serializers.IntegerField(
        required=False, help_text="Trial calls only: free calls this caller has left today."
    )


class PaidAnswerOutput(ReceiptOutput, PaymentOutput):
    """The fields every priced answer ends with."""


class ItemErrorOutput(AnswerOutput):
    code = serializers.CharField(help_text="match_too_costly")
    message = serializers.CharField()
    details = ExampleDictField(
        example={"needed": 41000000, "budget": 20000000, "reason": "budget_exceeded"}
    )


class BatchResultOutput(ResultOutput):
    """One quote of a batch; a failed one has ``error`` and every match field null."""

    match = serializers.ChoiceField(choices=VERDICTS, allow_null=True)
    occurrences = serializers.IntegerField(allow_null=True)
    normalised_sha256 = serializers.CharField(allow_null=True, required=False)
    error = ItemErrorOutput(required=False)


class CitationPageFieldsOutput(AnswerOutput):
    url = serializers.CharField()
    page = serializers.IntegerField(help_text="Index of the citation's page in pages.")
    final_url = serializers.CharField(allow_null=True)
    http_status = serializers.IntegerField(allow_null=True)
    content_kind = serializers.ChoiceField(choices=CONTENT_KINDS)
    advice = serializers.CharField()


# A citation's page fields first, then its result's, as the answer lists them.
class CitationResultOutput(CitationPageFieldsOutput, BatchResultOutput):
    # None takes an inherited declared field away (DRF's documented way); the stubs see
    # a field typed CharField set to None.
    note = None  # type: ignore[assignment]


class BatchPageOutput(PageOutput):
    normalised_sha256 = serializers.CharField(allow_null=True)
    injection_flags = serializers.ListField(child=serializers.CharField())
    advice = serializers.CharField()


class SummaryOutput(AnswerOutput):
    exact = serializers.IntegerField()
    fuzzy = serializers.IntegerField()
    none = serializers.IntegerField()
    passages = serializers.IntegerField(required=False, help_text="Passages mode only.")
    failed = serializers.IntegerField(help_text="Results that carry an error.")


class CitationsSummaryOutput(SummaryOutput):
    retracted = serializers.IntegerField(
        required=False,
        help_text="Citations on a work Crossref marks retracted; absent when DOI lookups are off.",
    )
    doi_unchecked = serializers.IntegerField(
        required=False,
        help_text="Citations whose page's DOI lookup was skipped (retraction unknown); "
        "absent when DOI lookups are off.",
    )


# Each priced answer's own fields first, then the receipt's and the payment's (the answer's
# order): its body is a base listed before PaidAnswerOutput's parts.
class CitationsBodyOutput(AnswerOutput):
    results = CitationResultOutput(many=True, help_text="One per citation, in request order.")
    pages = BatchPageOutput(many=True, help_text="One per distinct URL.")
    summary = CitationsSummaryOutput()
    note = serializers.CharField(required=False, help_text="Passages mode only.")


class VerifyCitationsOutput(CitationsBodyOutput, PaidAnswerOutput):
    pass


class QuotesBodyOutput(AnswerOutput):
    results = BatchResultOutput(many=True, help_text="One per quote, in request order.")
    page = PageOutput()
    injection_flags = serializers.ListField(child=serializers.CharField())
    advice = serializers.CharField()
    summary = SummaryOutput()
    note = serializers.CharField(required=False, help_text="Passages mode only.")


class VerifyQuotesOutput(QuotesBodyOutput, PaidAnswerOutput):
    pass


class FetchBodyOutput(AnswerOutput):
    page = PageOutput()
    text = serializers.CharField(
        allow_null=True, help_text="The normalised text; null when the page has none."
    )
    normalised_sha256 = serializers.CharField(allow_null=True)
    injection_flags = serializers.ListField(child=serializers.CharField())
    advice = serializers.CharField()


class PdfPagesOutput(AnswerOutput):
    pdf_pages = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        required=False,
        help_text="PDFs only: [start, end) of each page read, in code points of text.",
    )


# A fetch answer gives a PDF's page spans after its receipt and tier, before the payment's
# fields (services.page_text_fetch adds them to the signed body).
class FetchOutput(FetchBodyOutput, ReceiptOutput, PdfPagesOutput, PaymentOutput):
    pass
