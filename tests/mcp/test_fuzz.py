"""The /mcp half of the fixed-seed fuzzer (scripts/fuzz_api.py, fuzz_mcp) against the real
server: both eras' request shapes, malformed JSON-RPC, lone surrogates and invalid UTF-8;
every answer JSON-RPC, none a 5xx."""

from __future__ import annotations

import importlib.util

import pytest

from tests.live_service import ROOT

pytestmark = pytest.mark.timeout(600)


def _fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_api", ROOT / "scripts" / "fuzz_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_mcp_fuzzer_finds_no_500_and_no_answer_that_is_not_jsonrpc(service, capsys):
    failures = _fuzzer().fuzz_mcp(service.url, service.credential, seed=20261206, cases=400)
    printed = capsys.readouterr().out
    assert failures == [], printed
    # The seeded cases reach every kind of answer: results, both 4xx families and 202.
    for status in ("200", "400", "404", "202"):
        assert f"{status}: " in printed, printed
