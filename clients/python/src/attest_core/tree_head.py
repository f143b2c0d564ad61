"""Signed tree heads of the transparency log: what one says, and checking its signature."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import OKPKey

from attest_core.canonical import b64url_decode_strict, canonical_json
from attest_core.jws import ALGORITHM, REGISTRY, _json_object, sign_compact
from attest_core.merkle import HASH_SIZE

TREE_HEAD_TYP = "attest-tree-head+jwt"


class TreeHeadRefused(Exception):
    """A tree head that is malformed or whose signature does not check out."""


@dataclass(frozen=True)
class TreeHead:
    """A log's size and root at a moment (milliseconds since the epoch, as RFC 9162)."""

    tree_size: int
    root_hash: bytes
    timestamp: int

    def signed_fields(self) -> dict[str, Any]:
        return {
            "tree_size": self.tree_size,
            "root_hash": base64.b64encode(self.root_hash).decode("ascii"),
            "timestamp": self.timestamp,
        }


def sign_tree_head(head: TreeHead, *, key: OKPKey, kid: str) -> dict[str, Any]:
    """The head as served: its fields and ``signature``, a compact JWS over them."""
    fields = head.signed_fields()
    return {
        **fields,
        "signature": sign_compact(canonical_json(fields), key=key, kid=kid, typ=TREE_HEAD_TYP),
    }


def decode_hash(value: Any, name: str) -> bytes:
    """A base64 SHA-256 hash, or TreeHeadRefused naming the field."""
    if not isinstance(value, str):
        raise TreeHeadRefused(f"{name} is not a base64 string")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise TreeHeadRefused(f"{name} is not base64") from None
    if len(raw) != HASH_SIZE:
        raise TreeHeadRefused(f"{name} is not a SHA-256 hash")
    return raw


def _size(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TreeHeadRefused(f"{name} is not a non-negative integer")
    return value


def check_tree_head(head: Mapping[str, Any], *, public_keys: Mapping[str, OKPKey]) -> TreeHead:
    """The verified head, or TreeHeadRefused: the signature must cover exactly its fields."""
    signature = head.get("signature")
    if not isinstance(signature, str) or signature.count(".") != 2:
        raise TreeHeadRefused("signature is not a compact JWS")
    try:
        header = _json_object(b64url_decode_strict(signature.split(".")[0]))
    except ValueError:
        header = None
    if header is None or header.get("alg") != ALGORITHM or header.get("typ") != TREE_HEAD_TYP:
        raise TreeHeadRefused(f"signature is not an EdDSA JWS of type {TREE_HEAD_TYP}")
    key = public_keys.get(str(header.get("kid")))
    if key is None:
        raise TreeHeadRefused("signature names a key the JWKS does not hold")
    try:
        payload = jws.deserialize_compact(signature, key, registry=REGISTRY).payload
    except (JoseError, ValueError, TypeError):
        raise TreeHeadRefused("the signature does not match: the head was altered") from None
    signed = _json_object(payload)
    parsed = TreeHead(
        tree_size=_size(head.get("tree_size"), "tree_size"),
        root_hash=decode_hash(head.get("root_hash"), "root_hash"),
        timestamp=_size(head.get("timestamp"), "timestamp"),
    )
    if signed != parsed.signed_fields():
        raise TreeHeadRefused("the signed fields are not the head's fields")
    return parsed
