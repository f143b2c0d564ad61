"""/v1/receipt/verify and /.well-known/jwks.json."""

from __future__ import annotations

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.validators import ProhibitSurrogateCharactersValidator
from rest_framework.views import APIView

from attest.fields import (
    ExampleDictField,
    NoUnknownFields,
    StrictCharField,
    StrictIntegerField,
)
from attest.schema import route_error_responses
from billing.unpaid import unpaid_limited
from receipts import log, route_errors, selectors, services

JWKS_MAX_AGE = 300  # short, so a rotated-in key reaches caches within minutes


class AnyStringField(StrictCharField):
    """Any string at all, NUL and lone surrogates included: a receipt is judged, not refused."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.validators = [v for v in self.validators if not _is_character_guard(v)]

    def schema_pattern(self) -> None:
        return None


def _is_character_guard(validator) -> bool:
    return isinstance(
        validator, ProhibitNullCharactersValidator | ProhibitSurrogateCharactersValidator
    )


class JwkSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Jwk"

    kty = serializers.CharField()
    crv = serializers.CharField()
    x = serializers.CharField()
    kid = serializers.CharField(help_text="RFC 7638 JWK thumbprint")
    use = serializers.CharField()
    alg = serializers.CharField()


class JwksView(APIView):
    class OutputSerializer(serializers.Serializer):
        keys = JwkSerializer(many=True)

        class Meta:
            ref_name = "Jwks"

    @extend_schema(
        summary="Public receipt keys (JWKS)",
        description=(
            "Every Ed25519 key that has signed receipts, the active one first. Retired keys "
            "stay listed so old receipts keep verifying. Refetch when a receipt names a kid "
            "you have not seen."
        ),
        responses={200: OutputSerializer},
        tags=["receipts"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        response = Response(selectors.public_jwks())
        response["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
        return response


@unpaid_limited
class ReceiptVerifyView(APIView):
    class InputSerializer(NoUnknownFields):
        receipt = AnyStringField(
            allow_blank=True, trim_whitespace=False, help_text="A compact JWS from any answer."
        )
        text = StrictCharField(
            required=False,
            allow_blank=True,
            trim_whitespace=False,
            help_text="Optional: the page's normalised text, to check the hash and offsets.",
        )
        quote = StrictCharField(
            required=False,
            allow_blank=True,
            trim_whitespace=False,
            help_text="Optional: the quote as you sent it, to find the results it belongs to.",
        )
        page = StrictIntegerField(
            required=False, default=0, min_value=0, help_text="Index in pages that text is."
        )

        class Meta:
            ref_name = "ReceiptVerify"

    class OutputSerializer(serializers.Serializer):
        valid = serializers.BooleanField()
        kid = serializers.CharField(allow_null=True)
        claims = ExampleDictField(
            required=False,
            help_text="The receipt's signed claims, decoded.",
            example={
                "iss": "http://127.0.0.1:8000",
                "iat": 1775297518,
                "request_id": "5f0c7b1e2d9a4e3b8f610a5c9e2d7b14",
                "route": "/v1/verify/quote",
            },
        )
        issued_at = serializers.CharField(required=False)
        request_id = serializers.CharField(
            required=False, help_text="The ID Attest made for the call the receipt answers."
        )
        client_request_id = serializers.CharField(
            required=False,
            allow_null=True,
            help_text="The caller's own X-Request-ID for that call, if it sent one.",
        )
        key_state = serializers.ChoiceField(choices=["active", "retired"], required=False)
        checks = ExampleDictField(
            required=False,
            help_text="With text: page, page_in_receipt, normalised_sha256, results; with "
            "quote: quote_sha256, quote_results.",
            example={
                "page": 0,
                "page_in_receipt": True,
                "normalised_sha256": True,
                "results": [{"result": 0, "offsets_in_text": True, "span": "full audit"}],
                "quote_sha256": True,
                "quote_results": [0],
            },
        )
        reason = serializers.ChoiceField(
            choices=sorted(services.REASONS), required=False, help_text="Why valid is false."
        )
        message = serializers.CharField(required=False)

        class Meta:
            ref_name = "ReceiptCheck"

    @extend_schema(
        summary="Check a receipt",
        description=(
            "Free. Checks the signature against the published keys and returns the signed "
            "claims. A receipt that is malformed, altered, signed by an unknown key or of "
            "another type answers 200 with valid false and a reason code."
        ),
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            **route_error_responses(route_errors.RECEIPT_VERIFY),
        },
        examples=[
            OpenApiExample(
                "refused",
                value={"valid": False, "kid": None, "reason": "malformed", "message": "..."},
                response_only=True,
            )
        ],
        tags=["receipts"],
        auth=[],
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        outcome = services.verify_receipt(**serializer.validated_data)
        return Response(outcome.as_dict())


MAX_LOG_INDEX = 2**62  # far past any log; keeps a query-string number inside a BIGINT


class LogNumberField(serializers.IntegerField):
    """A whole number in a query string: digits only, so "5.0", "-1" and "1e3" are refused."""

    default_error_messages = {"invalid": "A whole number (digits only) is required."}

    def __init__(self, **kwargs):
        super().__init__(min_value=0, max_value=MAX_LOG_INDEX, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str) or not data.isascii() or not data.isdigit():
            self.fail("invalid")
        return super().to_internal_value(data)


class LogQuery(serializers.Serializer):
    """A query string of the log's routes: each parameter once, none unknown."""

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {unknown[0]: f"unknown parameter; the parameters are {', '.join(self.fields)}."}
            )
        repeated = [name for name in self.fields if len(data.getlist(name)) > 1]
        if repeated:
            raise serializers.ValidationError({repeated[0]: "Give this parameter once."})
        return super().to_internal_value(data)


@unpaid_limited
class LogHeadView(APIView):
    class OutputSerializer(serializers.Serializer):
        tree_size = serializers.IntegerField(min_value=0, help_text="Leaves in the log.")
        root_hash = serializers.CharField(help_text="RFC 9162 root hash, base64.")
        timestamp = serializers.IntegerField(help_text="When signed, ms since the epoch.")
        signature = serializers.CharField(
            help_text="Compact JWS (EdDSA, typ attest-tree-head+jwt, kid in the JWKS) over "
            "the canonical JSON of tree_size, root_hash and timestamp."
        )

        class Meta:
            ref_name = "TreeHead"

    @extend_schema(
        summary="Signed tree head of the transparency log",
        description=(
            "Free. The log's size and RFC 9162 root now, signed with the receipt keys. Keep "
            "the heads you see: a later head must be consistent with each "
            "(GET /v1/log/consistency), or the log was rewritten."
        ),
        responses={200: OutputSerializer, **route_error_responses(route_errors.LOG_HEAD)},
        tags=["receipts"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        LogQuery(data=request.query_params).is_valid(raise_exception=True)
        return Response(log.signed_tree_head())


@unpaid_limited
class LogProofView(APIView):
    class Query(LogQuery):
        index = LogNumberField(help_text="The leaf: an answer's receipt_log_index.")
        tree_size = LogNumberField(help_text="The size of a tree head you hold.")

        class Meta:
            ref_name = "LogProofQuery"

    class OutputSerializer(serializers.Serializer):
        leaf_index = serializers.IntegerField()
        tree_size = serializers.IntegerField()
        audit_path = serializers.ListField(
            child=serializers.CharField(), help_text="RFC 9162 inclusion proof, base64, leaf first."
        )

        class Meta:
            ref_name = "InclusionProof"

    @extend_schema(
        summary="Inclusion proof of a leaf",
        description=(
            "Free. Proves that leaf `index` (a receipt, hashed as SHA-256(0x00 || its ASCII "
            "bytes)) is in the tree of `tree_size` leaves whose root a signed head gives."
        ),
        parameters=[Query],
        responses={200: OutputSerializer, **route_error_responses(route_errors.LOG_PROOF)},
        tags=["receipts"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        query = self.Query(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(log.inclusion_proof(**query.validated_data))


@unpaid_limited
class LogConsistencyView(APIView):
    class Query(LogQuery):
        first = LogNumberField(help_text="The size of an older head you hold.")
        second = LogNumberField(help_text="The size of a newer head.")

        class Meta:
            ref_name = "LogConsistencyQuery"

    class OutputSerializer(serializers.Serializer):
        first = serializers.IntegerField()
        second = serializers.IntegerField()
        proof = serializers.ListField(
            child=serializers.CharField(), help_text="RFC 9162 consistency proof, base64."
        )

        class Meta:
            ref_name = "ConsistencyProof"

    @extend_schema(
        summary="Consistency proof between two tree sizes",
        description=(
            "Free. Proves that the tree of `second` leaves extends the tree of `first` "
            "leaves: nothing logged before was changed or dropped."
        ),
        parameters=[Query],
        responses={
            200: OutputSerializer,
            **route_error_responses(route_errors.LOG_CONSISTENCY),
        },
        tags=["receipts"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        query = self.Query(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(log.consistency_proof(**query.validated_data))
