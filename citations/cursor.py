"""The one opaque cursor format of every paged ledger route: signed, tied to its query.

A page that has more answers ``"next": {"cursor": "<token>"}``; the client sends it back
unchanged as ``after`` (the object, or the token alone in a query string). A token names
the query it was issued for (its scope), so it cannot page another one.
"""

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


def next_page(*, scope: str, position: list[Any]) -> dict[str, str]:
    """The ``next`` object of a page that has more."""
    return {"cursor": encode_cursor(scope=scope, position=position)}


def position_after(raw: Any, *, scope: str, shape: tuple[type, ...]) -> list[Any] | None:
    """The position a client's ``after`` names (None when absent), or BadCursor.

    ``after`` is a previous page's ``next`` object or its token; ``shape`` gives the type
    of each element of the position, so a token of another route's kind is refused too.
    """
    if raw is None:
        return None
    token = raw.get("cursor") if isinstance(raw, dict) and set(raw) == {"cursor"} else raw
    if not isinstance(token, str):
        raise BadCursor("not a cursor")
    position = decode_cursor(token, scope=scope)
    if len(position) != len(shape) or not all(
        isinstance(value, kind) and not isinstance(value, bool)
        for value, kind in zip(position, shape, strict=True)
    ):
        raise BadCursor("cursor of another kind")
    return position
