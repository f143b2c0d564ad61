"""The servers tests start never reach the real Crossref, whatever the suite's environment."""

from __future__ import annotations

import pytest

from tests.live_service import server_env
from tests.verification.servers import service_env


@pytest.mark.parametrize("build", [server_env, service_env])
def test_a_test_servers_environment_turns_doi_lookups_off(monkeypatch, build):
    monkeypatch.setenv("ATTEST_CROSSREF_URL", "https://api.crossref.org")
    assert build()["ATTEST_CROSSREF_URL"] == ""


@pytest.mark.parametrize("build", [server_env, service_env])
def test_a_test_may_point_its_server_at_its_own_crossref(build):
    env = build(ATTEST_CROSSREF_URL="http://127.0.0.1:8555")
    assert env["ATTEST_CROSSREF_URL"] == "http://127.0.0.1:8555"
