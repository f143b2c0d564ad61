"""The transparency log: append receipts and audit chain heads; read signed heads and proofs.

One RFC 9162 Merkle tree over every receipt the service signs and every project's audit
chain head. An append reads the tree's frontier (at most 64 stored subtree hashes) and
writes the leaf and the subtrees it completes (two rows on average), so it costs the same
at a million leaves as at ten; a proof reads its O(log n) nodes in one query.

Appends take turns: on PostgreSQL a transaction-scoped advisory lock, on SQLite the
write lock every transaction takes at BEGIN (``transaction_mode`` IMMEDIATE). A leaf's
index is the number of leaves committed before it, so two appends never share an index
and none is skipped, whichever process makes them.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable

from django.db import connection, transaction
from django.utils import timezone

from attest.errors import InvalidRequest
from attest_core import merkle
from attest_core.canonical import canonical_json
from attest_core.tree_head import TreeHead, sign_tree_head
from receipts.models import LogLeaf
from receipts.selectors import signing_keyring

# pg_advisory_xact_lock's key for "the log's next index" ("ATLG" in ASCII).
_LOCK_KEY = 0x41544C47


def log_append(
    *, kind: str, data: str, audit_project: int | None = None, audit_seq: int | None = None
) -> int:
    """Append one leaf and return its index; committed with the caller's transaction."""
    leaf = data.encode("ascii")
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        cursor.execute('SELECT max("index") FROM receipts_logleaf')
        last = cursor.fetchone()[0]
        size = 0 if last is None else last + 1
        frontier_keys = merkle.frontier_nodes(size)
        found = _nodes(cursor, frontier_keys)
        appended = merkle.append_leaf(
            size, [found[key] for key in frontier_keys], merkle.leaf_hash(leaf)
        )
        cursor.execute(
            'INSERT INTO receipts_logleaf ("index", kind, data, audit_project, audit_seq, '
            "created_at) VALUES (%s, %s, %s, %s, %s, %s)",
            [size, kind, data, audit_project, audit_seq, timezone.now()],
        )
        rows = ", ".join(["(%s, %s, %s)"] * len(appended.nodes))
        cursor.execute(
            f'INSERT INTO receipts_lognode (level, "index", hash) VALUES {rows}',
            [value for node in appended.nodes for value in node],
        )
    return size


def log_append_receipt(receipt: str) -> int:
    """Log a receipt just signed; its index goes into the answer as receipt_log_index."""
    return log_append(kind=LogLeaf.RECEIPT, data=receipt)


def audit_head_leaf(*, project: int, seq: int, head_hash: str) -> str:
    """The content-free leaf for a project's audit chain head: IDs and a hash, no event."""
    return canonical_json(
        {"audit_head": {"hash": head_hash, "project": project, "seq": seq}}
    ).decode("ascii")


def log_append_audit_head(*, project: int, seq: int, head_hash: str) -> int:
    """Log a project's audit chain head, in the transaction that wrote its last event."""
    return log_append(
        kind=LogLeaf.AUDIT_HEAD,
        data=audit_head_leaf(project=project, seq=seq, head_hash=head_hash),
        audit_project=project,
        audit_seq=seq,
    )


def latest_audit_head(*, project: int) -> dict | None:
    """The project's logged audit head furthest along (``seq``, ``hash``, ``index``), or None.

    By seq, not by index: two writers' heads may reach the log in either order.
    """
    leaf = (
        LogLeaf.objects.filter(audit_project=project)
        .order_by("-audit_seq", "-index")
        .only("index", "data")
        .first()
    )
    if leaf is None:
        return None
    head = json.loads(leaf.data)["audit_head"]
    return {"seq": head["seq"], "hash": head["hash"], "index": leaf.index}


def _nodes(cursor, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    keys = list(keys)
    if not keys:
        return {}
    where = " OR ".join(['(level = %s AND "index" = %s)'] * len(keys))
    cursor.execute(
        f'SELECT level, "index", hash FROM receipts_lognode WHERE {where}',
        [value for key in keys for value in key],
    )
    found = {(level, index): bytes(value) for level, index, value in cursor.fetchall()}
    missing = [key for key in keys if key not in found]
    if missing:
        raise RuntimeError(f"the transparency log lacks stored nodes {missing[:3]}")
    return found


def log_size() -> int:
    """How many leaves are committed."""
    with connection.cursor() as cursor:
        cursor.execute('SELECT max("index") FROM receipts_logleaf')
        last = cursor.fetchone()[0]
    return 0 if last is None else last + 1


def _read(build) -> object:
    """Run a proof or root builder over the nodes it needs, fetched in one query."""
    with connection.cursor() as cursor:
        found = _nodes(cursor, merkle.needed_nodes(build))
    return build(lambda level, index: found[(level, index)])


def log_root(size: int) -> bytes:
    """The root hash of the first ``size`` leaves."""
    return _read(lambda node: merkle.subtree_root(0, size, node))


def signed_tree_head() -> dict:
    """The latest tree head, signed now with the active receipt key."""
    size = log_size()
    head = TreeHead(tree_size=size, root_hash=log_root(size), timestamp=int(time.time() * 1000))
    key = signing_keyring().signing_key()
    return sign_tree_head(head, key=key.private, kid=key.kid)


def _within_head(value: int, name: str, size: int) -> None:
    if value > size:
        raise InvalidRequest(
            f"{name} {value} is past the log's head ({size} leaves); ask for the head first.",
            field=name,
            details={"tree_size": size},
        )


def inclusion_proof(*, index: int, tree_size: int) -> dict:
    """RFC 9162 inclusion proof of leaf ``index`` in the tree of ``tree_size`` leaves."""
    _within_head(tree_size, "tree_size", log_size())
    if index >= tree_size:
        raise InvalidRequest(f"index {index} is not below tree_size {tree_size}.", field="index")
    path = _read(lambda node: merkle.inclusion_path(index, tree_size, node))
    return {"leaf_index": index, "tree_size": tree_size, "audit_path": _b64(path)}


def consistency_proof(*, first: int, second: int) -> dict:
    """RFC 9162 consistency proof that the tree of ``second`` leaves extends ``first``."""
    _within_head(second, "second", log_size())
    if first > second:
        raise InvalidRequest(f"first {first} is past second {second}.", field="first")
    proof = _read(lambda node: merkle.consistency_path(first, second, node))
    return {"first": first, "second": second, "proof": _b64(proof)}


def _b64(hashes) -> list[str]:
    return [base64.b64encode(value).decode("ascii") for value in hashes]
