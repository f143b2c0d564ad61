"""Canonical JSON and strict base64url, so the same facts always sign the same bytes."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

_B64URL = re.compile(r"[A-Za-z0-9_-]*")


def canonical_json(value: Any) -> bytes:
    """UTF-8 JSON with sorted keys and no whitespace; NaN and infinities are refused."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode_strict(segment: str) -> bytes:
    """Decode unpadded base64url, refusing any spelling but the one canonical encoding.

    Base64 leaves spare bits in the last character; a lenient decoder maps several
    spellings to the same bytes, so a changed character could go unnoticed. Re-encoding
    and comparing makes every character of a receipt count.
    """
    if not _B64URL.fullmatch(segment) or len(segment) % 4 == 1:
        raise ValueError("not base64url")
    try:
        data = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc
    if b64url_encode(data) != segment:
        raise ValueError("not the canonical base64url spelling")
    return data
