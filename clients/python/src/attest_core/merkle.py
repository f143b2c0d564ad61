"""RFC 9162 Merkle trees: leaf and node hashes, roots, inclusion and consistency proofs.

The log stores the hash of every complete, aligned subtree: node ``(level, index)``
covers leaves ``[index * 2**level, (index + 1) * 2**level)``; level 0 holds the leaf
hashes. Every hash RFC 9162 needs for a tree of any size is a combination of such nodes,
so proofs read O(log n) stored hashes and an append writes on average two. Functions
that build proofs take ``node(level, index) -> bytes``; ``needed_nodes`` names the nodes
a proof reads, so a caller can fetch them all in one query first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

NodeReader = Callable[[int, int], bytes]


def leaf_hash(data: bytes) -> bytes:
    """RFC 9162 section 2.1.1: SHA-256(0x00 || leaf)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 section 2.1.1: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two smaller than ``size`` (size > 1): RFC 9162's k."""
    return 1 << ((size - 1).bit_length() - 1)


def _check_size(size: int, name: str = "tree_size") -> None:
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"{name} must be a non-negative integer")


def subtree_root(start: int, end: int, node: NodeReader) -> bytes:
    """MTH(D[start:end]) for a range RFC 9162's recursion visits (start aligned to it)."""
    size = end - start
    if size == 0:
        return EMPTY_ROOT
    if size & (size - 1) == 0 and start % size == 0:
        level = size.bit_length() - 1
        return node(level, start >> level)
    k = _split(size)
    return node_hash(subtree_root(start, start + k, node), subtree_root(start + k, end, node))


def inclusion_path(index: int, size: int, node: NodeReader) -> list[bytes]:
    """PATH(m, D[n]) of RFC 9162 section 2.1.3.1, leaf first."""
    _check_size(size)
    if not 0 <= index < size:
        raise ValueError("index must be below tree_size")
    path: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            path.append(subtree_root(start + k, end, node))
            end = start + k
        else:
            path.append(subtree_root(start, start + k, node))
            start += k
    path.reverse()
    return path


def consistency_path(first: int, second: int, node: NodeReader) -> list[bytes]:
    """PROOF(m, D[n]) of RFC 9162 section 2.1.4.1; empty when first is 0 or equals second."""
    _check_size(first, "first")
    _check_size(second, "second")
    if first > second:
        raise ValueError("first must not exceed second")
    if first in (0, second):
        return []
    proof: list[bytes] = []
    start, end, whole = 0, second, True
    m = first
    while True:
        size = end - start
        if m == size:
            if not whole:
                proof.append(subtree_root(start, end, node))
            break
        k = _split(size)
        if m <= k:
            proof.append(subtree_root(start + k, end, node))
            end = start + k
        else:
            proof.append(subtree_root(start, start + k, node))
            start += k
            m -= k
            whole = False
    proof.reverse()
    return proof


def needed_nodes(build: Callable[[NodeReader], object]) -> list[tuple[int, int]]:
    """The (level, index) nodes ``build`` reads: what a store must fetch before building."""
    seen: dict[tuple[int, int], None] = {}

    def record(level: int, index: int) -> bytes:
        seen[(level, index)] = None
        return EMPTY_ROOT

    build(record)
    return list(seen)


def verify_inclusion(
    leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 section 2.1.3.2: does ``path`` prove leaf hash ``leaf`` at ``index``?"""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 section 2.1.4.2: is the tree of size ``second`` an extension of ``first``?"""
    if not 0 <= first <= second:
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:  # every tree extends the empty one
        return not proof
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_root and sr == second_root


@dataclass(frozen=True)
class Appended:
    """What appending one leaf produced: the new frontier and the nodes to store."""

    index: int
    frontier: tuple[bytes, ...]
    nodes: tuple[tuple[int, int, bytes], ...]


def frontier_levels(size: int) -> list[int]:
    """The levels of the complete subtrees a tree of ``size`` leaves is made of, left first."""
    return [level for level in range(size.bit_length() - 1, -1, -1) if size >> level & 1]


def frontier_nodes(size: int) -> list[tuple[int, int]]:
    """The (level, index) of those subtrees: their hashes make the root (frontier_root)."""
    return [(level, (size >> level) - 1) for level in frontier_levels(size)]


def append_leaf(size: int, frontier: Sequence[bytes], leaf: bytes) -> Appended:
    """Add leaf hash ``leaf`` at index ``size`` to a tree whose frontier is ``frontier``."""
    levels = frontier_levels(size)
    if len(levels) != len(frontier):
        raise ValueError("the frontier does not match the tree size")
    stack = list(zip(levels, frontier, strict=True))
    nodes = [(0, size, leaf)]
    level, carry = 0, leaf
    while stack and stack[-1][0] == level:
        _, left = stack.pop()
        carry = node_hash(left, carry)
        level += 1
        nodes.append((level, size >> level, carry))
    stack.append((level, carry))
    return Appended(index=size, frontier=tuple(h for _, h in stack), nodes=tuple(nodes))


def frontier_root(frontier: Sequence[bytes]) -> bytes:
    """MTH of the whole tree from its frontier (the largest subtree first)."""
    if not frontier:
        return EMPTY_ROOT
    root = frontier[-1]
    for left in reversed(frontier[:-1]):
        root = node_hash(left, root)
    return root
