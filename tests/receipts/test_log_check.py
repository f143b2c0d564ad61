"""The offline checker's inclusion check and the log monitor: tampering and forks are caught."""

from __future__ import annotations

import io
import json
import time

import pytest
from django.db import connection, transaction

from attest_client import check, cli
from attest_core.tree_head import TreeHead, sign_tree_head
from receipts import selectors
from tests.receipts.samples import issue_sample

pytestmark = pytest.mark.django_db


def _save(tmp_path, name: str, value) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


def _forged_head(tree_size: int) -> dict:
    """A head the service's own key signed over a root that is not the log's: a fork."""
    key = selectors.signing_keyring().signing_key()
    head = TreeHead(tree_size=tree_size, root_hash=b"\x07" * 32, timestamp=int(time.time() * 1000))
    return sign_tree_head(head, key=key.private, kid=key.kid)


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = check.main(list(argv), stdout=out)
    return code, out.getvalue()


@pytest.fixture
def logged(api, tmp_path):
    """Three receipts logged; the second's answer, the saved head, its proof and the JWKS."""
    receipts = [issue_sample(quote=f"quote {i}") for i in range(3)]
    head = api.get("/v1/log/head").json()
    proof = api.get(f"/v1/log/proof?index=1&tree_size={head['tree_size']}").json()
    jwks = api.get("/.well-known/jwks.json").json()
    return {
        "receipts": receipts,
        "head": _save(tmp_path, "head.json", head),
        "proof": _save(tmp_path, "proof.json", proof),
        "jwks": _save(tmp_path, "jwks.json", jwks),
        "tree_size": head["tree_size"],
    }


def test_a_logged_receipt_verifies_against_the_saved_head(logged, tmp_path):
    receipt = _save(tmp_path, "r.jws", logged["receipts"][1])
    code, out = _run(
        receipt, "--jwks", logged["jwks"], "--head", logged["head"], "--proof", logged["proof"]
    )
    assert code == 0, out
    assert "OK    log       The receipt is leaf 1 of the log's tree of 3 leaves" in out


def test_a_tampered_receipt_is_not_in_the_log(logged, tmp_path):
    token = logged["receipts"][1]
    header, payload, signature = token.split(".")
    tampered = ".".join(
        [header, payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1], signature]
    )
    code, out = _run(
        _save(tmp_path, "r.jws", tampered), "--jwks", logged["jwks"], "--head", logged["head"],
        "--proof", logged["proof"],
    )  # fmt: skip
    assert code != 0
    assert "FAIL  log       The receipt is not leaf 1" in out


def test_another_receipts_proof_or_a_forked_head_fails_with_status_9(logged, tmp_path):
    other = _save(tmp_path, "r.jws", logged["receipts"][2])  # valid, but not leaf 1
    code, out = _run(
        other, "--jwks", logged["jwks"], "--head", logged["head"], "--proof", logged["proof"]
    )
    assert code == 9, out
    forked = _save(tmp_path, "forked.json", _forged_head(logged["tree_size"]))
    mine = _save(tmp_path, "mine.jws", logged["receipts"][1])
    code, out = _run(mine, "--jwks", logged["jwks"], "--head", forked, "--proof", logged["proof"])
    assert code == 9, out
    assert "INVALID (log: not_included)" in out


def test_head_and_proof_go_together(logged, tmp_path, capsys):
    receipt = _save(tmp_path, "r.jws", logged["receipts"][1])
    code, _ = _run(receipt, "--jwks", logged["jwks"], "--head", logged["head"])
    assert code == 2
    assert "--head and --proof go together" in capsys.readouterr().err


@pytest.mark.django_db(transaction=True)
def test_the_monitor_keeps_consistent_heads_and_reports_a_fork(live_server, tmp_path, capsys):
    state = tmp_path / "heads.json"
    issue_sample(quote="first")
    argv = ["monitor", "--url", live_server.url, "--state", str(state), "--once"]
    assert cli.main(argv) == 0
    assert "the first one kept" in capsys.readouterr().out
    for i in range(4):
        issue_sample(quote=f"more {i}")
    assert check.main(argv[:]) == 0  # python -m receipts.check monitor, the same command
    assert "consistent with the one of 1 seen before" in capsys.readouterr().out
    kept = json.loads(state.read_text())
    assert [head["tree_size"] for head in kept["heads"]] == [1, 5]

    # A head of 3 leaves signed over another root: the log showed someone another tree.
    kept["heads"].append(_forged_head(3))
    kept["heads"] = [h for h in kept["heads"] if h["tree_size"] != 5]
    state.write_text(json.dumps(kept))
    issue_sample(quote="after the fork")
    assert cli.main(argv) == 9
    assert (
        "INCONSISTENT: the head of 6 leaves does not extend the head of 3"
        in capsys.readouterr().out
    )
    assert len(json.loads(state.read_text())["inconsistent"]) == 1


def _rewrite_past_the_trigger(level: int, index: int, value: bytes) -> None:
    """What a database superuser can do: switch the append-only trigger off and rewrite."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with transaction.atomic():
                cursor.execute("SET LOCAL session_replication_role = replica")
                cursor.execute(
                    'UPDATE receipts_lognode SET hash = %s WHERE level = %s AND "index" = %s',
                    [value, level, index],
                )
            return
        cursor.execute("DROP TRIGGER receipts_lognode_no_update")
        try:
            cursor.execute(
                'UPDATE receipts_lognode SET hash = %s WHERE level = %s AND "index" = %s',
                [value, level, index],
            )
        finally:
            cursor.execute(
                "CREATE TRIGGER receipts_lognode_no_update BEFORE UPDATE ON receipts_lognode "
                "BEGIN SELECT RAISE(ABORT, 'the transparency log is append-only'); END"
            )


@pytest.mark.django_db(transaction=True)
def test_the_monitor_reports_a_log_rewritten_after_it_kept_a_head(live_server, tmp_path, capsys):
    # The service's own tree is changed (its first four leaves rewritten in the database,
    # past the triggers, as withdrawing a receipt would need): the next head it signs
    # does not extend the one the monitor kept, and the monitor says so.
    for i in range(4):
        issue_sample(quote=f"kept {i}")
    state = tmp_path / "heads.json"
    argv = ["monitor", "--url", live_server.url, "--state", str(state), "--once"]
    assert cli.main(argv) == 0
    capsys.readouterr()
    _rewrite_past_the_trigger(level=2, index=0, value=b"\x05" * 32)
    issue_sample(quote="after the rewrite")
    assert cli.main(argv) == 9
    assert (
        "INCONSISTENT: the head of 5 leaves does not extend the head of 4"
        in capsys.readouterr().out
    )
