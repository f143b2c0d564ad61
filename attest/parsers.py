"""The JSON body parser: DRF's, refusing text that is not valid Unicode and nesting too deep.

Every route reads its body through here, so no route can take (and later fail to
encode, store or echo) a string that is not Unicode: a lone surrogate, which a JSON
``\\udfff`` escape makes, or bytes that are not UTF-8, which are decoded as lone
surrogates too (``surrogateescape``) so that both are refused alike, naming the field.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

from attest.errors import field_path

_SURROGATE = re.compile("[\ud800-\udfff]")

NOT_UNICODE = (
    "is not valid Unicode text (a lone surrogate such as \\udfff, or bytes that are not "
    "UTF-8); send the text as UTF-8."
)


def is_unicode(text: str) -> bool:
    """True when ``text`` can be encoded as UTF-8 (no lone surrogate)."""
    return text.isascii() or _SURROGATE.search(text) is None


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\udfff``), safe to show."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def invalid_text_path(data: Any) -> list[str | int] | None:
    """The path (keys and indices) to the first string of ``data`` that is not Unicode.

    A key that is not Unicode is named by its escaped form. Iterative, not recursive: a
    body nested as deeply as the JSON decoder allows must not exhaust the stack here.
    """
    stack: list[tuple[list[str | int], Any]] = [([], data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not is_unicode(value):
                return path
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                if not is_unicode(key):
                    return [*path, printable(key)]
                stack.append(([*path, key], item))
        elif isinstance(value, list):
            stack.extend(([*path, index], item) for index, item in _reversed_items(value))
    return None


def _reversed_items(items: list) -> Iterator[tuple[int, Any]]:
    # Pushed last to first, so the first offending member is the first popped.
    return ((index, items[index]) for index in range(len(items) - 1, -1, -1))


def refuse_invalid_text(data: Any) -> None:
    """Raise the 400 ``invalid_request`` naming the first string of ``data`` not Unicode."""
    path = invalid_text_path(data)
    if path is None:
        return
    name = field_path(path)
    if not name:
        raise ValidationError(f"The body {NOT_UNICODE}", code="invalid_unicode")
    raise ValidationError({name: [f"The value {NOT_UNICODE}"]}, code="invalid_unicode")


class JSONBodyParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        reader = codecs.getreader(encoding)(stream, errors="surrogateescape")
        constant = json.strict_constant if self.strict else None
        try:
            data = json.load(reader, parse_constant=constant)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except RecursionError:
            # DRF turns only ValueError into a 400; a body nested past the interpreter's
            # recursion limit would otherwise answer 500.
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
        refuse_invalid_text(data)
        return data
