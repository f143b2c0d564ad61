"""The servers tests start never reach the real Crossref, whatever the suite's environment.

Every server a test or benchmark starts takes its environment from
``tests.live_service.server_env`` (GunicornServer, the two-instance and two-process
tests, the benchmarks), so this is the one place that must hold.
"""

from __future__ import annotations

from tests.live_service import server_env


def test_a_test_servers_environment_turns_doi_lookups_off(monkeypatch):
    monkeypatch.setenv("ATTEST_CROSSREF_URL", "https://api.crossref.org")
    assert server_env()["ATTEST_CROSSREF_URL"] == ""
    assert server_env(DATABASE_URL="sqlite:///x")["ATTEST_CROSSREF_URL"] == ""


def test_a_test_may_point_its_server_at_its_own_crossref(monkeypatch):
    monkeypatch.setenv("ATTEST_CROSSREF_URL", "https://api.crossref.org")
    env = server_env(ATTEST_CROSSREF_URL="http://127.0.0.1:8555")
    assert env["ATTEST_CROSSREF_URL"] == "http://127.0.0.1:8555"
