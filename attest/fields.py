"""Request fields that take exactly the JSON types the OpenAPI schema gives them.

DRF's own fields are forgiving: a CharField turns 5 into "5", an IntegerField takes "5",
a BooleanField takes "yes" and 1, a UUIDField takes an integer. The schema says
``string``, ``integer`` and ``boolean``, so each of those is refused here, and what a
string may not hold (a NUL, a lone surrogate, nothing but spaces) is in the schema as a
``pattern``, so a client reading the schema learns every rule the field applies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

# What DRF's CharField refuses in every string (ProhibitNullCharactersValidator; a lone
# surrogate, which ProhibitSurrogateCharactersValidator refuses, is not valid Unicode and
# so outside any JSON string a schema describes).
TEXT_PATTERN = r"^[^\x00]*$"
# The characters str.strip() trims (those for which str.isspace() is true), spelled out:
# "\s" is a different set to each reader of a schema (ASCII's six to schemathesis, ECMA-262's
# list with U+FEFF to a browser, Unicode's White_Space to Rust), and none of them is the set
# DRF trims, which has U+001C-U+001F and U+0085. tests/attest/test_fields.py holds it to
# str.isspace().
WHITESPACE_CLASS = r"\x09-\x0d\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# The same, with at least one character that is not white space: DRF trims a string
# before it refuses a blank one.
NOT_BLANK_PATTERN = rf"^[^\x00]*[^\x00{WHITESPACE_CLASS}][^\x00]*$"


class StrictCharField(serializers.CharField):
    """A JSON string only: a number or list is refused, not turned into text.

    ``pattern`` (unanchored) is a rule the trimmed string must match whole, refused with
    ``pattern_message``; the schema's one ``pattern`` then states it, with the white space
    the field trims around it. It must refuse the empty string and NUL itself, so that one
    pattern still states every rule the field applies.
    """

    def __init__(self, *, pattern: str | None = None, pattern_message: str = "", **kwargs):
        super().__init__(**kwargs)
        if pattern is not None and (re.fullmatch(pattern, "") or re.search(pattern, "\x00")):
            raise ValueError(f"the pattern {pattern!r} must refuse a blank string and NUL")
        self.pattern = pattern
        self.pattern_message = pattern_message or f"must match ^{pattern}$"

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise serializers.ValidationError(self.pattern_message, code="pattern")
        return value

    def schema_pattern(self) -> str | None:
        if self.pattern is not None:
            around = f"[{WHITESPACE_CLASS}]*" if self.trim_whitespace else ""
            return f"^{around}(?:{self.pattern}){around}$"
        blank_refused = self.trim_whitespace and not self.allow_blank
        return NOT_BLANK_PATTERN if blank_refused else TEXT_PATTERN


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: "5", 5.0 and true are refused."""

    default_error_messages = {"invalid": "A JSON integer is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
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


def _shown(value) -> str:
    """A refused value as a message may show it: JSON-typed, short, and always encodable."""
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:40] + "..."
        return '"' + text.encode("utf-8", "backslashreplace").decode("utf-8") + '"'
    return JSON_TYPES.get(type(value), "a value")


# How a message names the JSON type of a value the parser produced.
JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


class StrictChoiceField(serializers.ChoiceField):
    """One of the listed strings: 1 never matches the choice "1", nor true "True".

    A refusal names the allowed values (DRF's only says the value is not one of them).
    """

    def to_internal_value(self, data):
        if data == "" and self.allow_blank:
            return ""
        if not isinstance(data, str) or data not in self.choice_strings_to_values:
            allowed = ", ".join(f'"{choice}"' for choice in self.choice_strings_to_values)
            raise serializers.ValidationError(
                f"{_shown(data)} is not allowed; give one of {allowed}.", code="invalid_choice"
            )
        return super().to_internal_value(data)


class StrictUUIDField(serializers.UUIDField):
    """A UUID as a JSON string: DRF would also take an integer and make a UUID of it."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class StrictListField(serializers.ListField):
    """A JSON array; anything else is refused saying what was sent instead."""

    def to_internal_value(self, data):
        if not isinstance(data, list):
            raise serializers.ValidationError(
                f"Send a JSON array here, not {JSON_TYPES.get(type(data), 'that')}.",
                code="not_a_list",
            )
        return super().to_internal_value(data)


class NoUnknownFields(serializers.Serializer):
    """The base of every request body's serializer: a field it does not know is refused.

    A misspelt "treshold" or a misplaced "known_at" would otherwise be ignored and the
    request answered as if it had not been sent. A body (or member) that is not a JSON
    object is refused in words that say what to send.
    """

    def unknown_field(self, data) -> str | None:
        """The first field of ``data`` this serializer does not declare, if any."""
        if isinstance(data, Mapping):
            for name in data:
                if name not in self.fields:
                    return name
        return None

    def unknown_field_message(self) -> str:
        return f"This field is not known here; the fields are {', '.join(self.fields)}."

    def not_an_object(self, data) -> serializers.ValidationError:
        message = (
            f"Send a JSON object with the fields {', '.join(self.fields)}, "
            f"not {JSON_TYPES.get(type(data), 'that')}."
        )
        return serializers.ValidationError(
            {api_settings.NON_FIELD_ERRORS_KEY: [message]}, code="invalid"
        )

    def run_validation(self, data=empty):
        if data is None and self.parent is None:  # a body of JSON null
            raise self.not_an_object(data)
        return super().run_validation(data)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise self.not_an_object(data)
        name = self.unknown_field(data)
        if name is not None:
            raise serializers.ValidationError({name: [self.unknown_field_message()]})
        return super().to_internal_value(data)


# --- what the schema says about them (drf-spectacular extensions) ----------------


class StrictCharFieldSchema(OpenApiSerializerFieldExtension):
    target_class = StrictCharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and schema.get("type") == "string" and "enum" not in schema:
            pattern = self.target.schema_pattern()
            if pattern and "pattern" not in schema and "format" not in schema:
                schema["pattern"] = pattern
        return schema


class NoUnknownFieldsSchema(OpenApiSerializerExtension):
    target_class = NoUnknownFields
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema


class ExampleDictField(serializers.DictField):
    """A free-form object in an answer, documented with a real example of its keys.

    Without one, a schema reader (and Swagger UI, with its ``additionalProp1``) sees no
    key the object ever holds.
    """

    def __init__(self, *, example: dict, **kwargs):
        self.schema_example = example
        super().__init__(**kwargs)


class ExampleDictFieldSchema(OpenApiSerializerFieldExtension):
    target_class = ExampleDictField

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        return {**schema, "example": self.target.schema_example}
