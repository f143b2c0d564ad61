"""The one opaque cursor format of every paged ledger route: signed, tied to its query."""

from __future__ import annotations

from typing import Any

from django.core import signing

_SALT = "attest.citations.cursor"


class BadCursor(ValueError):
    """The cursor was not issued by this service for this query."""


def encode_cursor(*, scope: str, position: list[Any]) -> str:
    return signing.dumps({"s": scope, "p": position}, salt=_SALT, compress=False)


def decode_cursor(token: str, *, scope: str) -> list[Any]:
    try:
        payload = signing.loads(token, salt=_SALT)
    except signing.BadSignature as exc:
        raise BadCursor("unreadable cursor") from exc
    if not isinstance(payload, dict) or payload.get("s") != scope:
        raise BadCursor("cursor of another query")
    position = payload.get("p")
    if not isinstance(position, list):
        raise BadCursor("cursor without a position")
    return position
