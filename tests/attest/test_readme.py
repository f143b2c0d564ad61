"""The README's first verify call and first ledger round trip run as written, in a shell,
against a real server migrated and keyed the way `make run` does it."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import sys

import pytest

from tests.live_service import ROOT, gunicorn, migrate, server_env

README = (ROOT / "README.md").read_text()
MAKE_RUN_URL = "http://127.0.0.1:8000"
MARK = "=== next block ==="


def _first_hour_blocks() -> list[str]:
    """The README's shell blocks after its two commands (which set the machine up)."""
    after = README.split("## A first verify call", 1)[1].split("\n## The docs", 1)[0]
    return re.findall(r"```sh\n(.*?)```", after, re.DOTALL)


def test_the_first_hour_is_six_calls_of_the_routes_it_introduces():
    called = re.findall(r"curl -s http://127\.0\.0\.1:8000(/[a-z0-9/.-]+)", README)
    assert called == [
        "/v1/sample/quote",
        "/v1/sample/quote",
        "/v1/receipt/verify",
        "/v1/observations",
        "/v1/recall",
        "/v1/citations/resolve",
    ]


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl, jq")
def test_the_readmes_curl_lines_answer_what_the_readme_says(tmp_path):
    env = server_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'readme.sqlite3'}",
        CACHE_URL="locmemcache://readme",
        SECRET_KEY="readme-" + secrets.token_urlsafe(40),
        ATTEST_VAR_DIR=str(tmp_path),
        NO_PROXY="127.0.0.1,localhost",
    )
    migrate(env)
    subprocess.run(
        [sys.executable, "manage.py", "ensure_signing_key"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    with gunicorn(env) as base:
        script = f"\necho '{MARK}'\n".join(_first_hour_blocks())
        script = script.replace(MAKE_RUN_URL, base)
        manage = f"{sys.executable} {ROOT / 'manage.py'}"
        script = script.replace(".venv/bin/python manage.py", manage)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,  # where ingest.json is written
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = [json.loads(out) if out.strip() else None for out in done.stdout.split(MARK)]
    sample, checked, created, ingested, recalled, resolved = outputs
    assert sample["result"]["match"] == "fuzzy" and sample["tier"] == "sample"
    assert checked["valid"] is True
    assert created is None  # TOKEN=$(...) prints nothing
    [fact] = ingested["facts"]
    assert (fact["predicate"], fact["value"]) == ("lives_in", "Dublin")
    assert [f["id"] for f in recalled["facts"]] == [fact["id"]]
    [evidence] = resolved["evidence"]
    # What the README says the answer holds.
    assert '"quote": "I moved to Dublin in March"' in README
    assert evidence["quote"] == "I moved to Dublin in March"
    assert (evidence["byte_start"], evidence["byte_end"], evidence["source_message_id"]) == (
        0,
        26,
        "m1",
    )
    assert resolved["valid"]["from"].startswith("2026-03-01")
    assert resolved["valid"]["from_precision"] == "month"
