"""Reads: the configured receipt keys and the public JWKS."""

from __future__ import annotations

from django.conf import settings

from receipts.keyring import KeyRing, load_keyring


def signing_keyring() -> KeyRing:
    """The configured keys, re-read whenever another process rotated them."""
    return load_keyring(settings.ATTEST_SIGNING_KEYS)


def public_jwks() -> dict:
    """Every published key, active first; public halves only."""
    return signing_keyring().jwks()
