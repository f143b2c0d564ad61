"""Request validation and the documented response shapes of the verification routes."""

from __future__ import annotations

from urllib.parse import urlsplit

from rest_framework import serializers

from attest.errors import InvalidRequest
from verification.addresses import MAX_URL_LENGTH, InvalidURL, parse_url
from verification.engine.classify import CONTENT_KINDS
from verification.services import MODES, normalised_quote

# A raw quote this long cannot normalise down to 1,000 characters in any sensible
# request; refusing it early keeps normalisation cheap.
MAX_RAW_QUOTE_CHARS = 20_000


class StrictCharField(serializers.CharField):
    """A JSON string only: a number or list is refused, not turned into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only: "yes", "false", 1 and 0 are refused, not guessed at."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictFloatField(serializers.FloatField):
    """A JSON number only: a string such as "0.9" and a boolean are refused."""

    default_error_messages = {"invalid": "A JSON number is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class VerifyQuoteInput(serializers.Serializer):
    url = StrictCharField(
        max_length=MAX_URL_LENGTH,
        trim_whitespace=False,
        help_text="http or https URL, at most 2,048 characters.",
    )
    quote = StrictCharField(
        max_length=MAX_RAW_QUOTE_CHARS,
        trim_whitespace=False,
        help_text=(
            "Text to look for (with passages, the claim to find support for); at most 1,000 "
            "characters after normalisation."
        ),
    )
    match = serializers.ChoiceField(choices=MODES, default="fuzzy")
    case_sensitive = StrictBooleanField(default=False)
    threshold = StrictFloatField(min_value=0.5, max_value=1.0, default=0.9)

    def to_internal_value(self, data):
        # A misspelt option ("treshold") would otherwise be ignored and its default used.
        if isinstance(data, dict):
            for name in data:
                if name not in self.fields:
                    raise InvalidRequest(
                        f"{name}: unknown field; the fields are {', '.join(self.fields)}.",
                        field=name,
                    )
        return super().to_internal_value(data)

    def validate_url(self, value: str) -> str:
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

    def validate(self, attrs: dict) -> dict:
        if attrs["match"] == "passages" and attrs["case_sensitive"]:
            raise InvalidRequest(
                'case_sensitive: must be false with "match": "passages".', field="case_sensitive"
            )
        # Checked here, before any work; the service normalises the quote again itself.
        normalised_quote(attrs["quote"], mode=attrs["match"])
        return attrs


class PassageOutput(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    score = serializers.FloatField()
    text = serializers.CharField()
    missing = serializers.ListField(child=serializers.CharField())
    flags = serializers.ListField(child=serializers.CharField())
    pdf_page = serializers.IntegerField(required=False)
    pdf_page_end = serializers.IntegerField(required=False)


class ResultOutput(serializers.Serializer):
    match = serializers.ChoiceField(choices=["exact", "fuzzy", "none", "passages"])
    score = serializers.FloatField(allow_null=True)
    start = serializers.IntegerField(
        allow_null=True, help_text="Code-point offset, normalised text."
    )
    end = serializers.IntegerField(allow_null=True)
    context = serializers.CharField(allow_null=True)
    occurrences = serializers.IntegerField()
    normalised_sha256 = serializers.CharField(allow_null=True)
    pdf_page = serializers.IntegerField(required=False, help_text="1-based, PDFs only.")
    pdf_page_end = serializers.IntegerField(required=False)
    passages = PassageOutput(many=True, required=False)
    scorer = serializers.CharField(required=False)
    note = serializers.CharField(required=False)


class PdfOutput(serializers.Serializer):
    page_count = serializers.IntegerField()
    pages_read = serializers.IntegerField()
    truncated = serializers.BooleanField()


class PageOutput(serializers.Serializer):
    requested_url = serializers.CharField()
    final_url = serializers.CharField()
    http_status = serializers.IntegerField(allow_null=True)
    content_kind = serializers.ChoiceField(choices=CONTENT_KINDS)
    signals = serializers.ListField(child=serializers.CharField())
    title = serializers.CharField(allow_null=True)
    content_sha256 = serializers.CharField(allow_null=True)
    retrieved_at = serializers.DateTimeField()
    doi = serializers.CharField(allow_null=True)
    pdf = PdfOutput(required=False)


class VerifyQuoteOutput(serializers.Serializer):
    result = ResultOutput()
    page = PageOutput()
    injection_flags = serializers.ListField(child=serializers.CharField())
    advice = serializers.CharField()
    receipt = serializers.CharField(
        help_text="Compact JWS (EdDSA); check it at /v1/receipt/verify."
    )
    tier = serializers.ChoiceField(choices=["trial", "paid", "sample"])
    rail = serializers.CharField(required=False, help_text='"x402" on paid calls only.')
    network = serializers.CharField(
        required=False,
        help_text="Paid calls only: CAIP-2 network of the payment, e.g. eip155:84532.",
    )
    trial_calls_left = serializers.IntegerField(
        required=False, help_text="Trial calls only: free calls this caller has left today."
    )
