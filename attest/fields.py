"""Serializer fields that take JSON types as sent: no number read as text, no "true" as true."""

from __future__ import annotations

from rest_framework import serializers


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


class StrictIntegerField(serializers.IntegerField):
    """A JSON whole number only: "8", 8.0 and true are refused."""

    default_error_messages = {"invalid": "A whole JSON number is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    """One of the choices, sent as a JSON string: 1 is not "1"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)
