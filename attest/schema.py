"""OpenAPI pieces every app's routes share: the one error envelope."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorBody(serializers.Serializer):
    class Meta:
        ref_name = "ErrorBody"

    code = serializers.CharField(help_text="Stable snake_case code, e.g. invalid_request.")
    message = serializers.CharField(help_text="One sentence a person can act on.")
    details = serializers.DictField(help_text="e.g. field, reason, limit_bytes, accepts.")


class ErrorEnvelope(serializers.Serializer):
    """The shape of every error the API answers (attest.errors renders it)."""

    class Meta:
        ref_name = "Error"

    error = ErrorBody()


def error_response(description: str) -> OpenApiResponse:
    """A documented error status whose body is the standard envelope."""
    return OpenApiResponse(ErrorEnvelope, description=description)
