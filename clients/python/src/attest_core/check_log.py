"""Whether a receipt is in the transparency log, given a saved signed head and a proof."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from joserfc.jwk import OKPKey

from attest_core.check_findings import Finding
from attest_core.merkle import HASH_SIZE, leaf_hash, verify_consistency, verify_inclusion
from attest_core.tree_head import TreeHead, TreeHeadRefused, check_tree_head


def _hashes(values: Any) -> list[bytes] | None:
    if not isinstance(values, list):
        return None
    out = []
    for value in values:
        if not isinstance(value, str):
            return None
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != HASH_SIZE:
            return None
        out.append(raw)
    return out


def _fail(reason: str, message: str) -> Finding:
    return Finding("fail", "log", reason, message)


def inclusion_finding(
    token: str,
    *,
    head: Mapping[str, Any],
    proof: Mapping[str, Any],
    public_keys: Mapping[str, OKPKey],
    answer: Mapping[str, Any] | None = None,
) -> Finding:
    """Check that ``token`` is the leaf the proof names, under the signed head's root."""
    try:
        checked = check_tree_head(head, public_keys=public_keys)
    except TreeHeadRefused as exc:
        return _fail("head_refused", f"The saved tree head does not check out: {exc}.")
    index, size = proof.get("leaf_index"), proof.get("tree_size")
    path = _hashes(proof.get("audit_path"))
    if not isinstance(index, int) or not isinstance(size, int) or path is None:
        return _fail(
            "proof_malformed", "The proof is not leaf_index, tree_size and a base64 audit_path."
        )
    if size != checked.tree_size:
        return _fail(
            "proof_for_another_head",
            f"The proof is for a tree of {size} leaves; the saved head has {checked.tree_size}.",
        )
    shown = (answer or {}).get("receipt_log_index")
    if shown is not None and shown != index:
        return _fail(
            "index_mismatch",
            f"The answer says receipt_log_index {shown}; the proof is for leaf {index}.",
        )
    leaf = leaf_hash(token.encode("ascii", errors="replace"))
    if not verify_inclusion(leaf, index, size, path, checked.root_hash):
        return _fail(
            "not_included",
            f"The receipt is not leaf {index} of the log's tree of {size} leaves at the saved "
            "head: it was altered, or the proof is not this receipt's.",
        )
    return Finding(
        "ok",
        "log",
        "included",
        f"The receipt is leaf {index} of the log's tree of {size} leaves under the saved "
        f"signed head (timestamp {checked.timestamp}).",
    )


def heads_consistent(older: TreeHead, newer: TreeHead, proof: Sequence[Any]) -> bool:
    """Whether ``newer`` extends ``older`` by the RFC 9162 consistency ``proof`` (base64)."""
    hashes = _hashes(list(proof))
    if hashes is None:
        return False
    return verify_consistency(
        older.tree_size, newer.tree_size, older.root_hash, newer.root_hash, hashes
    )
