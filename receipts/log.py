"""The transparency log: append receipts and audit chain heads; read signed heads and proofs.

One RFC 9162 Merkle tree over every receipt the service signs and every project's audit
chain head. An append reads the tree's frontier (at most 64 stored subtree hashes) and
writes the leaf and the subtrees it completes (two rows on average), so it costs the same
at a million leaves as at ten; a proof reads its O(log n) nodes in one query.

A leaf's index is the number of leaves committed before it, so two appends never share
an index and none is skipped, whichever process makes them: on PostgreSQL the leaf's
primary key settles a race (the loser appends again on the new size), on SQLite the
write lock every transaction takes at BEGIN (``transaction_mode`` IMMEDIATE) makes
appends take turns. On PostgreSQL an append is two statements; a verification call makes
them in the transaction that writes its record, so they share that commit.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.utils import timezone

from attest.errors import InvalidRequest
from attest.metrics import LOG_APPEND_SECONDS, LOG_SIZE, timed
from attest.replicas import serving_replica
from attest_core import merkle
from attest_core.canonical import canonical_json
from receipts.models import LogLeaf, LogNode

# PostgreSQL: the appenders' lock, then the size and the frontier in one snapshot taken
# after it (receipts migration 0003): for each level whose bit is set in the size, the last
# complete subtree of that level, only those nodes probed (about 12 at a million leaves).
_PG_FRONTIER = "SELECT n, level, hash FROM receipts_log_frontier()"
# SQLite: the size and its frontier in one statement, as the function above gives them on
# PostgreSQL: for each level whose bit is set in the size, the node (level, size >> level
# minus 1), probed by the primary key. A row per level of the size's bits (none for 0).
_SQLITE_FRONTIER = (
    'WITH size(n) AS (SELECT coalesce(max("index") + 1, 0) FROM receipts_logleaf), '
    "levels(level) AS (SELECT 0 UNION ALL SELECT level + 1 FROM levels WHERE level < 62) "
    "SELECT size.n, levels.level, node.hash FROM size "
    "LEFT JOIN levels ON (size.n >> levels.level) & 1 "
    "LEFT JOIN receipts_lognode node ON node.level = levels.level "
    'AND node."index" = (size.n >> levels.level) - 1'
)
_INSERT_LEAF = (
    'INSERT INTO receipts_logleaf ("index", kind, data, audit_project, audit_seq, created_at) '
    "VALUES (%s, %s, %s, %s, %s, %s)"
)
_ATTEMPTS = 1000  # each failed attempt means another append committed: progress is made


def log_append(
    *,
    kind: str,
    leaf: bytes,
    data: str = "",
    audit_project: int | None = None,
    audit_seq: int | None = None,
) -> int:
    """Append one leaf (``leaf``: the bytes RFC 9162 hashes) and return its index;
    committed with the caller's transaction. ``data`` is what the row keeps of it.

    The index is the number of leaves committed before, read with the frontier in one
    snapshot. On PostgreSQL appenders take turns on a lock held to their transaction's end,
    and each reads the size after taking it; on SQLite they take turns on the write lock,
    and the leaf's primary key refuses a second leaf at an index, so an append that raced
    another fails there and is made again on the new size. No index is shared and none
    skipped.
    """
    with timed(LOG_APPEND_SECONDS):
        index = _append(kind, leaf, data, audit_project, audit_seq)
    LOG_SIZE.set(index + 1)
    return index


def _append(
    kind: str, leaf: bytes, data: str, audit_project: int | None, audit_seq: int | None
) -> int:
    leaf_hash = merkle.leaf_hash(leaf)
    row = [kind, data, audit_project, audit_seq, timezone.now()]
    if _appends_take_turns():
        # PostgreSQL's appenders' lock, or SQLite's write lock taken at BEGIN, is held to
        # the end of the caller's transaction, so the size read after it is final: no race
        # to an index, so no savepoint to retry from (an append inside a call's
        # transaction is the lock, the read and the write).
        with transaction.atomic(savepoint=False), connection.cursor() as cursor:
            size, frontier = _size_and_frontier(cursor)
            _insert(cursor, [size, *row], merkle.append_leaf(size, frontier, leaf_hash).nodes)
        return size
    for _ in range(_ATTEMPTS):
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                size, frontier = _size_and_frontier(cursor)
                appended = merkle.append_leaf(size, frontier, leaf_hash)
                _insert(cursor, [size, *row], appended.nodes)
            return size
        except IntegrityError:
            continue
    raise RuntimeError(f"the transparency log refused {_ATTEMPTS} appends in a row")


def _appends_take_turns() -> bool:
    """Whether a transaction holds the appenders' turn from its start to its end: always
    on PostgreSQL (the lock the frontier function takes), on SQLite when every transaction
    begins IMMEDIATE (the write lock; attest.settings sets it, a deployment may not)."""
    if connection.vendor == "postgresql":
        return True
    mode = connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
    return str(mode).upper() in {"IMMEDIATE", "EXCLUSIVE"}


def _insert(cursor, leaf: list, nodes: tuple[tuple[int, int, bytes], ...]) -> None:
    """Write the leaf and its nodes: one statement on PostgreSQL, two on SQLite."""
    values = [value for node in nodes for value in node]
    insert_nodes = 'INSERT INTO receipts_lognode (level, "index", hash) VALUES ' + ", ".join(
        ["(%s, %s, %s)"] * len(nodes)
    )
    if connection.vendor == "postgresql":
        cursor.execute(f"WITH leaf AS ({_INSERT_LEAF}) {insert_nodes}", [*leaf, *values])
        return
    cursor.execute(_INSERT_LEAF, leaf)
    cursor.execute(insert_nodes, values)


def _size_and_frontier(cursor) -> tuple[int, list[bytes]]:
    if connection.vendor == "postgresql":
        cursor.execute(_PG_FRONTIER)
        rows = cursor.fetchall()
        size = rows[0][0]
        by_level = {level: bytes(value) for _, level, value in rows if level is not None}
        return size, [by_level[level] for level in merkle.frontier_levels(size)]
    # SQLite: the transaction's write lock (taken at BEGIN IMMEDIATE) makes appends take turns.
    cursor.execute(_SQLITE_FRONTIER)
    rows = cursor.fetchall()
    size = rows[0][0]
    by_level = {level: bytes(value) for _, level, value in rows if value is not None}
    levels = merkle.frontier_levels(size)
    missing = [level for level in levels if level not in by_level]
    if missing:
        raise RuntimeError(f"the transparency log lacks stored frontier nodes at {missing[:3]}")
    return size, [by_level[level] for level in levels]


def log_append_receipt(receipt: str) -> int:
    """Log a receipt just signed; its index goes into the answer as receipt_log_index.

    Only the leaf's hash is kept (in the level-0 node): a receipt may sign a quote from a
    subject's messages, which erasure must be able to remove from every table, and the
    log can never be rewritten. Its holder brings the receipt to prove it is logged."""
    return log_append(kind=LogLeaf.RECEIPT, leaf=receipt.encode("ascii"))


def receipt_is_leaf(receipt: str, index: int) -> bool:
    """Whether leaf ``index`` of the log is ``receipt`` (its stored leaf hash is the receipt's)."""
    node = LogNode.objects.filter(level=0, index=index).values_list("hash", flat=True).first()
    return node is not None and bytes(node) == merkle.leaf_hash(receipt.encode("ascii"))


def audit_head_leaf(*, project: int, seq: int, head_hash: str) -> str:
    """The content-free leaf for a project's audit chain head: IDs and a hash, no event."""
    return canonical_json(
        {"audit_head": {"hash": head_hash, "project": project, "seq": seq}}
    ).decode("ascii")


def log_append_audit_head(*, project: int, seq: int, head_hash: str) -> int:
    """Log a project's audit chain head, in the transaction that wrote its last event."""
    head = audit_head_leaf(project=project, seq=seq, head_hash=head_hash)
    return log_append(
        kind=LogLeaf.AUDIT_HEAD,
        leaf=head.encode("ascii"),
        data=head,
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
    """The stored hashes of ``keys`` (level, index), in one query; every one must exist."""
    keys = list(keys)
    if not keys:
        return {}
    if connection.vendor == "postgresql":
        # One index probe per key: a long OR of conditions was planned as a slow bitmap scan.
        cursor.execute(
            'SELECT n.level, n."index", n.hash FROM unnest(%s::smallint[], %s::bigint[]) '
            'AS k(level, idx) JOIN receipts_lognode n ON n.level = k.level AND n."index" = k.idx',
            [[level for level, _ in keys], [index for _, index in keys]],
        )
    else:
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


def log_size(*, using: str = DEFAULT_DB_ALIAS) -> int:
    """How many leaves are committed (in the primary, or in the copy ``using`` names)."""
    with connections[using].cursor() as cursor:
        cursor.execute('SELECT max("index") FROM receipts_logleaf')
        last = cursor.fetchone()[0]
    return 0 if last is None else last + 1


_Built = TypeVar("_Built")


def _read(build: Callable[[merkle.NodeReader], _Built], *, using: str = DEFAULT_DB_ALIAS) -> _Built:
    """Run a proof or root builder over the nodes it needs, fetched in one query."""
    with connections[using].cursor() as cursor:
        found = _nodes(cursor, merkle.needed_nodes(build))
    return build(lambda level, index: found[(level, index)])


def log_root(size: int) -> bytes:
    """The root hash of the first ``size`` leaves."""
    return _read(lambda node: merkle.subtree_root(0, size, node))


def signed_tree_head() -> dict:
    """The latest tree head, signed now with the active receipt key."""
    size = log_size()
    # The JWS stack (joserfc) is imported by the first signed head, not by every importer of
    # the log (the ledger's audit, so the admin, so every manage.py command).
    from attest_core.tree_head import TreeHead, sign_tree_head
    from receipts.selectors import signing_keyring

    head = TreeHead(tree_size=size, root_hash=log_root(size), timestamp=int(time.time() * 1000))
    key = signing_keyring().signing_key()
    return sign_tree_head(head, key=key.signer, kid=key.kid)


def _within_head(value: int, name: str, size: int) -> None:
    if value > size:
        raise InvalidRequest(
            f"{name} {value} is past the log's head ({size} leaves); ask for the head first.",
            field=name,
            details={"tree_size": size},
        )


def _proof_source(needed: int, name: str) -> str:
    """Where a proof over the first ``needed`` leaves is read: a read replica whose copy
    holds them all (leaves and their nodes never change once written), else the primary,
    which also answers a size past the head."""
    replica = serving_replica(None)
    if replica is not None and log_size(using=replica) >= needed:
        return replica
    _within_head(needed, name, log_size())
    return DEFAULT_DB_ALIAS


def inclusion_proof(*, index: int, tree_size: int) -> dict:
    """RFC 9162 inclusion proof of leaf ``index`` in the tree of ``tree_size`` leaves."""
    if index >= tree_size:
        _within_head(tree_size, "tree_size", log_size())
        raise InvalidRequest(f"index {index} is not below tree_size {tree_size}.", field="index")
    source = _proof_source(tree_size, "tree_size")
    path = _read(lambda node: merkle.inclusion_path(index, tree_size, node), using=source)
    return {"leaf_index": index, "tree_size": tree_size, "audit_path": _b64(path)}


def consistency_proof(*, first: int, second: int) -> dict:
    """RFC 9162 consistency proof that the tree of ``second`` leaves extends ``first``."""
    if first > second:
        _within_head(second, "second", log_size())
        raise InvalidRequest(f"first {first} is past second {second}.", field="first")
    source = _proof_source(second, "second")
    proof = _read(lambda node: merkle.consistency_path(first, second, node), using=source)
    return {"first": first, "second": second, "proof": _b64(proof)}


def _b64(hashes) -> list[str]:
    return [base64.b64encode(value).decode("ascii") for value in hashes]
