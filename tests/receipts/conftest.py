"""Fixtures for receipt tests: a private key directory per test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from receipts.keyring import ensure_key


@pytest.fixture
def key_dir(tmp_path, settings):
    """A fresh key directory with one active key, configured as ATTEST_SIGNING_KEYS."""
    directory = tmp_path / "keys"
    ensure_key(str(directory), now=datetime.now(UTC))
    settings.ATTEST_SIGNING_KEYS = str(directory)
    return directory
