"""The transparency log: every receipt logged, append-only storage, signed heads and proofs.

Proofs from the live routes are checked with the independent RFC 9162 implementation of
test_merkle, never with the module that built them.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, connections, transaction

from attest_core.jws import REGISTRY
from attest_core.tree_head import TreeHeadRefused, check_tree_head
from receipts import log, selectors
from receipts.models import LogLeaf, LogNode
from tests.receipts.samples import issue_sample
from tests.receipts.test_merkle import (
    ref_leaf,
    ref_mth,
    ref_verify_consistency,
    ref_verify_inclusion,
)
from verification.models import Verification

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def _b64(values: list[str]) -> list[bytes]:
    return [base64.b64decode(value) for value in values]


def _head(api) -> dict:
    response = api.get("/v1/log/head")
    assert response.status_code == 200, response.content
    return response.json()


def test_every_answer_with_a_receipt_names_its_logged_leaf(api):
    first = api.get("/v1/sample/quote").json()
    second = api.get("/v1/sample/citations").json()
    third = api.get("/v1/sample/quote?match=exact").json()
    indexes = [body["receipt_log_index"] for body in (first, second, third)]
    assert indexes == [indexes[0], indexes[0] + 1, indexes[0] + 2]
    for body in (first, second, third):
        leaf = LogLeaf.objects.get(index=body["receipt_log_index"])
        node = LogNode.objects.get(level=0, index=body["receipt_log_index"])
        # The log keeps the receipt's leaf hash, never the receipt (erasure must reach it).
        assert (leaf.kind, leaf.data) == ("receipt", "")
        assert bytes(node.hash) == ref_leaf(body["receipt"].encode("ascii"))
    # receipt_log_index follows receipt, before tier, as the schema lists it.
    keys = list(first)
    assert keys.index("receipt_log_index") == keys.index("receipt") + 1


def _refuse_answered_records(cursor) -> None:
    """A real database refusal of the answered record (a trigger), nothing mocked."""
    if connection.vendor == "postgresql":
        cursor.execute(
            "CREATE FUNCTION test_refuse_answered() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no answered record'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_answered BEFORE INSERT ON verification_verification "
            "FOR EACH ROW WHEN (NEW.outcome = 'answered') EXECUTE FUNCTION test_refuse_answered()"
        )
    else:
        cursor.execute(
            "CREATE TRIGGER refuse_answered BEFORE INSERT ON verification_verification "
            "WHEN NEW.outcome = 'answered' BEGIN SELECT RAISE(ABORT, 'no answered record'); END"
        )


def test_the_leaf_commits_with_the_calls_record_or_not_at_all(api):
    # The append shares the transaction of the call's answered record: when that write
    # fails, the leaf rolls back with it (no leaf for a receipt nobody was sent), and the
    # call is recorded as failed.
    with connection.cursor() as cursor:
        _refuse_answered_records(cursor)
    api.raise_request_exception = False
    response = api.get("/v1/sample/quote")
    assert response.status_code == 500
    assert not LogLeaf.objects.exists()
    assert list(Verification.objects.values_list("outcome", flat=True)) == ["failed"]


def test_head_is_signed_with_a_published_key_and_matches_the_leaves(api):
    receipts = [issue_sample(quote=f"quote number {i}") for i in range(5)]
    head = _head(api)
    keys = selectors.signing_keyring().public_keys()
    checked = check_tree_head(head, public_keys=keys)
    assert checked.tree_size == 5
    assert checked.root_hash == ref_mth([r.encode() for r in receipts])
    assert set(head) == {"tree_size", "root_hash", "timestamp", "signature"}
    # The signature is a plain JWS over the three fields, checkable with the JWKS alone.
    from joserfc import jws

    kid = selectors.signing_keyring().active.kid
    payload = jws.deserialize_compact(head["signature"], keys[kid], registry=REGISTRY).payload
    assert b'"tree_size":5' in payload


def test_an_altered_head_is_refused(api):
    issue_sample()
    head = _head(api)
    keys = selectors.signing_keyring().public_keys()
    with pytest.raises(TreeHeadRefused, match="signed fields"):
        check_tree_head({**head, "tree_size": head["tree_size"] + 1}, public_keys=keys)
    forged_root = base64.b64encode(b"\x01" * 32).decode()
    with pytest.raises(TreeHeadRefused, match="signed fields"):
        check_tree_head({**head, "root_hash": forged_root}, public_keys=keys)
    receipt = issue_sample()
    with pytest.raises(TreeHeadRefused, match="attest-tree-head"):
        check_tree_head({**head, "signature": receipt}, public_keys=keys)


def test_live_inclusion_and_consistency_proofs_verify_by_the_rfc(api):
    receipts = [issue_sample(quote=f"quote {i}").encode() for i in range(13)]
    head = _head(api)
    root = base64.b64decode(head["root_hash"])
    assert root == ref_mth(receipts)
    for index in range(13):
        body = api.get(f"/v1/log/proof?index={index}&tree_size=13").json()
        assert (body["leaf_index"], body["tree_size"]) == (index, 13)
        path = _b64(body["audit_path"])
        assert ref_verify_inclusion(index, 13, ref_leaf(receipts[index]), path, root)
        assert not ref_verify_inclusion(index, 13, ref_leaf(receipts[index] + b"x"), path, root)
    for first in range(1, 13):
        body = api.get(f"/v1/log/consistency?first={first}&second=13").json()
        proof = _b64(body["proof"])
        assert ref_verify_consistency(first, 13, ref_mth(receipts[:first]), root, proof)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("/v1/log/proof?index=0&tree_size=4", "tree_size"),  # past the head of 3
        ("/v1/log/proof?index=3&tree_size=3", "index"),
        ("/v1/log/proof?index=-1&tree_size=3", "index"),
        ("/v1/log/proof?index=1.0&tree_size=3", "index"),
        ("/v1/log/proof?tree_size=3", "index"),
        ("/v1/log/proof?index=0&index=1&tree_size=3", "index"),
        ("/v1/log/proof?index=0&tree_size=3&extra=1", "extra"),
        ("/v1/log/consistency?first=1&second=4", "second"),
        ("/v1/log/consistency?first=3&second=2", "first"),
        ("/v1/log/consistency?first=a&second=2", "first"),
        ("/v1/log/head?tree_size=1", "tree_size"),
    ],
)
def test_bad_sizes_and_parameters_are_invalid_requests(api, query, field):
    for i in range(3):
        issue_sample(quote=f"quote {i}")
    response = api.get(query)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"]["field"] == field


def test_log_rows_cannot_be_changed_or_removed_through_the_orm():
    issue_sample()
    leaf = LogLeaf.objects.get()
    leaf.data = "forged"
    with pytest.raises(ValueError, match="append-only"):
        leaf.save()
    with pytest.raises(ValueError, match="append-only"):
        leaf.delete()
    with pytest.raises(ValueError, match="append-only"):
        LogLeaf.objects.update(data="forged")
    with pytest.raises(ValueError, match="append-only"):
        LogNode.objects.all().delete()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE receipts_logleaf SET data = 'forged'",
        "DELETE FROM receipts_logleaf",
        "UPDATE receipts_lognode SET hash = hash",
        "DELETE FROM receipts_lognode",
    ],
)
def test_log_rows_cannot_be_changed_or_removed_in_sql(statement):
    issue_sample()
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    assert LogLeaf.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.parametrize("table", ["receipts_logleaf", "receipts_lognode"])
def test_the_log_cannot_be_truncated_by_the_applications_database_user(table):
    # TRUNCATE fires no row trigger: a statement trigger refuses it, for the very user
    # and connection the service writes with.
    issue_sample()
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"TRUNCATE {table}")
    assert (LogLeaf.objects.count(), LogNode.objects.filter(level=0).count()) == (1, 1)


_LEAF = (
    'INSERT INTO receipts_logleaf ("index", kind, data, created_at) '
    "VALUES (%s, 'receipt', '', CURRENT_TIMESTAMP)"
)


@pytest.mark.parametrize("index", [999999, 2, 0])
def test_a_leaf_is_taken_only_at_the_next_index(index):
    issue_sample()  # leaf 0
    with (
        pytest.raises(DatabaseError, match="next index"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(_LEAF, [index])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_LEAF, [1])  # the next index is taken
    assert list(LogLeaf.objects.values_list("index", flat=True)) == [0, 1]


@pytest.mark.parametrize(("level", "index"), [(0, 5), (1, 3), (0, 0)])
def test_a_subtree_hash_is_taken_only_at_its_levels_next_index(level, index):
    issue_sample()  # node 0/0
    with (
        pytest.raises(DatabaseError, match="next index"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            'INSERT INTO receipts_lognode (level, "index", hash) VALUES (%s, %s, %s)',
            [level, index, bytes(32)],
        )
    assert LogNode.objects.count() == 1


def test_appends_still_fill_every_index_and_level_in_order():
    for _ in range(5):
        issue_sample()
    assert list(LogLeaf.objects.values_list("index", flat=True)) == [0, 1, 2, 3, 4]
    nodes = set(LogNode.objects.values_list("level", "index"))
    assert nodes == {(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 1), (2, 0)}


def test_admin_lists_the_log_read_only(client):
    issue_sample()
    admin = User.objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(admin)
    page = client.get("/admin/receipts/logleaf/")
    assert page.status_code == 200
    assert client.get("/admin/receipts/logleaf/?q=not-a-number").status_code == 200
    assert b"receipt #0" in page.content or b">0<" in page.content
    assert client.get("/admin/receipts/logleaf/add/").status_code == 403
    leaf = LogLeaf.objects.get()
    assert (
        client.post(f"/admin/receipts/logleaf/{leaf.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert LogLeaf.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_from_many_connections_make_one_tree():
    """Eight threads, each with its own database connection, append 25 receipts each."""
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []
    logged: dict[int, str] = {}
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            barrier.wait()
            for i in range(25):
                receipt = f"receipt-{n}-{i}"
                index = log.log_append_receipt(receipt)
                with lock:
                    logged[index] = receipt
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(logged) == list(range(200))
    stored = list(LogLeaf.objects.order_by("index").values_list("index", flat=True))
    assert stored == list(range(200))
    assert log.log_root(200) == ref_mth([logged[index].encode() for index in range(200)])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_from_several_processes_make_one_tree():
    """Four processes, started together (each waits on its stdin), append 40 receipts each."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "LOG_LEVEL": "WARNING",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.receipts.append_worker", str(n), "40"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    try:
        for worker in workers:  # every process connected before any appends
            assert worker.stdout.readline().strip() == "ready"
        for worker in workers:
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outputs = [worker.communicate(timeout=120)[0] for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0, 0, 0]
    logged: dict[int, str] = {}
    for output in outputs:
        for index, receipt in json.loads(output).items():
            assert int(index) not in logged
            logged[int(index)] = receipt
    assert sorted(logged) == list(range(160))
    stored = list(LogLeaf.objects.order_by("index").values_list("index", flat=True))
    assert stored == list(range(160))
    assert log.log_root(160) == ref_mth([logged[index].encode() for index in range(160)])
