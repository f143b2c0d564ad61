"""The attest command against a real Attest on loopback: JSON on stdout, the API's error
object on stderr, and the exit statuses its help documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attest_client.cli import EXIT_NO_ANSWER, EXIT_REFUSED, EXIT_USAGE
from tests.clients.conftest import QUOTE
from tests.live_service import free_port

ATTEST = Path(sys.executable).with_name("attest")

# The first test starts the service (migrations, gunicorn): minutes on a loaded machine.
pytestmark = pytest.mark.timeout(600)


def attest(*args: str, url: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ATTEST_")}
    environment.update(ATTEST_URL=url, **env)
    return subprocess.run(
        [str(ATTEST), *args], capture_output=True, text=True, env=environment, timeout=120
    )


def test_verify_quote_pays_and_prints_the_answer(service, payer_key):
    done = attest(
        "verify-quote", service.article, QUOTE, "--match", "exact",
        url=service.url, ATTEST_PAYER_KEY=payer_key,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["tier"] == "paid" and answer["result"]["match"] == "exact"


def test_a_refusal_exits_1_with_the_error_object_on_stderr(service, payer_key):
    done = attest(
        "verify-quote", service.pages.url("/private/x"), QUOTE,
        url=service.url, ATTEST_PAYER_KEY=payer_key,
    )  # fmt: skip
    assert done.returncode == EXIT_REFUSED and done.stdout == ""
    refusal = json.loads(done.stderr)
    assert refusal["status"] == 403 and refusal["error"]["code"] == "robots_disallowed"
    unpaid = attest("fetch", service.article, url=service.url)
    assert unpaid.returncode == EXIT_REFUSED
    assert json.loads(unpaid.stderr)["error"]["code"] == "payment_required"


def test_no_service_exits_3_and_bad_arguments_exit_2(service, tmp_path):
    down = attest("jwks", url=f"http://127.0.0.1:{free_port()}")
    assert down.returncode == EXIT_NO_ANSWER
    assert json.loads(down.stderr)["error"]["code"] == "transport"
    assert attest("verify-quote", service.article, url=service.url).returncode == EXIT_USAGE
    broken = tmp_path / "citations.json"
    broken.write_text("[{not json")
    done = attest("verify-citations", str(broken), url=service.url)
    assert done.returncode == EXIT_USAGE and "not JSON" in done.stderr
    assert "ATTEST_PAYER_KEY" in attest("--help", url=service.url).stdout


def test_batches_fetch_and_check_a_saved_answer(service, payer_key, tmp_path):
    paying = {"url": service.url, "ATTEST_PAYER_KEY": payer_key}
    citations = tmp_path / "citations.json"
    citations.write_text(json.dumps([{"url": service.article, "quote": QUOTE}]))
    done = attest("verify-citations", str(citations), **paying)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["match"] == "exact"
    done = attest("verify-quotes", service.article, QUOTE, "not on the page", **paying)
    assert [r["match"] for r in json.loads(done.stdout)["results"]] == ["exact", "none"]

    fetched = attest("fetch", service.article, **paying)
    assert fetched.returncode == 0, fetched.stderr
    answer = tmp_path / "answer.json"
    answer.write_text(fetched.stdout)
    text = tmp_path / "page.txt"
    text.write_text(json.loads(fetched.stdout)["text"])
    checked = attest(
        "check", str(answer), "--jwks", f"{service.url}/.well-known/jwks.json",
        "--text", str(text), url=service.url,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1].startswith("VALID")
    body = json.loads(fetched.stdout)
    body["page"]["http_status"] = 404
    answer.write_text(json.dumps(body))
    tampered = attest("check", str(answer), "--jwks", f"{service.url}/.well-known/jwks.json", "-q",
                      url=service.url)  # fmt: skip
    assert tampered.returncode == 8, tampered.stdout  # "answer": shows what is not signed
    assert tampered.stdout.startswith("INVALID (answer")


@pytest.mark.parametrize("command", [["jwks"], ["sample"]])
def test_the_free_commands(service, command):
    done = attest(*command, url=service.url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


def test_the_ledger_commands(service, tmp_path):
    ledger = {"url": service.url, "ATTEST_CREDENTIAL": service.credential}
    messages = tmp_path / "messages.json"
    messages.write_text(
        json.dumps(
            {
                "subject": "cli-u",
                "messages": [
                    {
                        "id": "m1",
                        "role": "user",
                        "text": "I moved to Lisbon in May.",
                        "occurred_at": "2026-05-04T10:00:00Z",
                    }
                ],
            }
        )
    )
    ingested = attest("ingest", str(messages), **ledger)
    assert ingested.returncode == 0, ingested.stderr
    fact_id = json.loads(ingested.stdout)["facts"][0]["id"]
    recalled = json.loads(attest("recall", "cli-u", **ledger).stdout)
    assert fact_id in [fact["id"] for fact in recalled["facts"]]
    assert json.loads(attest("resolve", fact_id, **ledger).stdout)["id"] == fact_id
    assert json.loads(attest("facts", "--subject", "cli-u", **ledger).stdout)["facts"]
    exported = attest("export", "cli-u", **ledger)
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert lines[0]["type"] == "subject" and lines[-1]["type"] == "end"
    retracted = attest("retract", fact_id, "Wrong city.", **ledger)
    assert json.loads(retracted.stdout)["status"] == "retracted"
    refused = attest("recall", "cli-u", url=service.url)
    assert refused.returncode == EXIT_REFUSED and json.loads(refused.stderr)["status"] == 401


def test_credits_top_up_then_balance(service, payer_key):
    bought = attest("credits", "--top-up", "1.50", url=service.url, ATTEST_PAYER_KEY=payer_key)
    assert bought.returncode == 0, bought.stderr
    credential = json.loads(bought.stdout)["credential"]
    paid = attest(
        "verify-quote", service.article, QUOTE, url=service.url, ATTEST_CREDENTIAL=credential
    )
    assert paid.returncode == 0, paid.stderr
    assert json.loads(paid.stdout)["rail"] == "credit"
    shown = attest("credits", url=service.url, ATTEST_CREDENTIAL=credential)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["balance"] == "1.49"
    short = attest("credits", "--top-up", "0.01", url=service.url, ATTEST_PAYER_KEY=payer_key)
    assert short.returncode == EXIT_REFUSED
    assert json.loads(short.stderr)["error"]["details"]["field"] == "amount"
