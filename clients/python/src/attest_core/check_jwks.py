"""Read the public keys of a JWKS document, refusing anything a receipt checker should not trust."""

from __future__ import annotations

from typing import Any

from joserfc.errors import JoseError
from joserfc.jwk import OKPKey


class JwksError(ValueError):
    """The JWKS cannot be used; the message says what is wrong with it."""


def jwks_public_keys(jwks: Any) -> dict[str, OKPKey]:
    """The Ed25519 keys of a JWKS by kid; keys of other types are skipped.

    A kid must be the key's RFC 7638 thumbprint, as the service publishes it: a
    receipt names its key by that thumbprint, so a relabelled entry could make a
    receipt verify under a key it does not name. Private members are refused: a
    JWKS for checking is public, and a private key in it is a leak to report.
    """
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
        raise JwksError('not a JWKS: expected a JSON object {"keys": [...]}')
    keys: dict[str, OKPKey] = {}
    for index, entry in enumerate(jwks["keys"]):
        if not isinstance(entry, dict):
            raise JwksError(f"keys[{index}] is not a JSON object")
        if entry.get("kty") != "OKP" or entry.get("crv") != "Ed25519":
            continue
        if "d" in entry:
            raise JwksError(f"keys[{index}] holds a private key; use the public JWKS only")
        try:
            # Whatever "x" holds (JSON, or nothing) goes to joserfc, which refuses a bad one.
            public: dict[str, Any] = {"kty": "OKP", "crv": "Ed25519", "x": entry.get("x")}
            key = OKPKey.import_key(public)
        except (JoseError, ValueError, TypeError) as exc:
            raise JwksError(f"keys[{index}] is not a usable Ed25519 public key ({exc})") from None
        thumbprint = key.thumbprint()
        if entry.get("kid") != thumbprint:
            raise JwksError(
                f"keys[{index}] has kid {entry.get('kid')!r}, not its RFC 7638 thumbprint "
                f"{thumbprint}"
            )
        keys[thumbprint] = key
    if not keys:
        raise JwksError("the JWKS holds no Ed25519 key")
    return keys
