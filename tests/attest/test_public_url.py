"""One public base URL: receipts, offers and samples name the address the service runs on."""

from __future__ import annotations

import base64
import json
import os

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from environ import Env

from attest.config import public_base_url
from tests.live_service import free_port, server_env, serving


def _claims(receipt: str) -> dict:
    payload = receipt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@pytest.fixture
def served_by_make_run(tmp_path):
    """`PORT=<port> make run` on a fresh SQLite file, as a new user starts it."""
    port = free_port()
    env = server_env(
        PORT=str(port),
        WORKERS="2",  # one answers the robots.txt request the other makes
        ATTEST_VAR_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path / 'run.sqlite3'}",
        # Our own demo page may be fetched, and no trial, so an unpaid call gets the offer.
        ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
        ATTEST_TRIAL_CALLS_PER_DAY="0",
    )
    command = ["make", "--no-print-directory", "run"]
    with serving(command, port=port, env=env, log=tmp_path / "make-run.log") as base:
        yield base


def test_make_run_on_another_port_names_that_port_everywhere(served_by_make_run):
    base = served_by_make_run
    sample = httpx.get(f"{base}/v1/sample/quote", timeout=30).json()
    assert sample["page"]["requested_url"] == f"{base}/v1/sample/page"
    assert _claims(sample["receipt"])["iss"] == base
    # Unpaid, with no trial: the offer names the resource on the served port too.
    unpaid = httpx.post(
        f"{base}/v1/verify/quote", json={"url": f"{base}/v1/sample/page", "quote": "x"}, timeout=30
    )
    assert unpaid.status_code == 402, unpaid.text
    offer = json.loads(base64.b64decode(unpaid.headers["PAYMENT-REQUIRED"]))
    assert offer["resource"]["url"] == f"{base}/v1/verify/quote"


def _read(value: str | None) -> str:
    os.environ.pop("TEST_PUBLIC_URL", None)
    if value is not None:
        os.environ["TEST_PUBLIC_URL"] = value
    try:
        return public_base_url(Env(), "TEST_PUBLIC_URL", fallback="http://127.0.0.1:9000")
    finally:
        os.environ.pop("TEST_PUBLIC_URL", None)


def test_the_public_url_falls_back_to_the_served_address_and_loses_a_trailing_slash():
    assert _read(None) == "http://127.0.0.1:9000"
    assert _read("https://attest.example/") == "https://attest.example"


@pytest.mark.parametrize(
    "value", ["attest.example", "ftp://attest.example", "https://a.example/v1", "https://:80"]
)
def test_a_public_url_that_is_not_a_base_url_is_refused(value):
    with pytest.raises(ImproperlyConfigured, match="TEST_PUBLIC_URL"):
        _read(value)
