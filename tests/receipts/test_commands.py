"""ensure_signing_key, rotate_signing_key and list_signing_keys."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from joserfc.jwk import OKPKey

from receipts.keyring import load_keyring


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_ensure_creates_a_key_once_in_the_configured_directory(tmp_path, settings):
    directory = tmp_path / "dev-keys"
    settings.ATTEST_SIGNING_KEYS = str(directory)
    first = run("ensure_signing_key")
    second = run("ensure_signing_key")
    kid = load_keyring(str(directory)).active.kid
    assert f"Signing key {kid} created" in first
    assert f"Signing key {kid} is active" in second
    assert len(list(directory.glob("*.pem"))) == 1


def test_rotate_then_list_shows_one_active_and_the_retired_key(key_dir):
    before = load_keyring(str(key_dir)).active.kid
    output = run("rotate_signing_key")
    after = load_keyring(str(key_dir)).active.kid
    assert f"Active signing key: {after}" in output
    assert f"Retired (verify only): {before}" in output
    rows = [json.loads(line) for line in run("list_signing_keys", "--json").splitlines()]
    assert [(row["kid"], row["state"], row["can_sign"]) for row in rows] == [
        (after, "active", True),
        (before, "retired", False),
    ]
    table = run("list_signing_keys")
    assert before in table and "public-only" in table


def test_rotate_refuses_an_inline_key_with_advice(settings):
    settings.ATTEST_SIGNING_KEYS = OKPKey.generate_key("Ed25519").as_pem(private=True).decode()
    with pytest.raises(CommandError, match="new private key first"):
        run("rotate_signing_key")
    assert "active" in run("list_signing_keys")
