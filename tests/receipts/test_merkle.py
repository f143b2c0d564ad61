"""attest_core.merkle against RFC 9162, checked by a second implementation written here.

The reference below works on plain lists of leaves, straight from the RFC's recursive
definitions (section 2.1.1 MTH, 2.1.3.1 PATH, 2.1.4.1 PROOF/SUBPROOF) and its
verification algorithms (2.1.3.2, 2.1.4.2), and shares no code with the module under
test. The roots of the eight reference inputs are the Certificate Transparency
reference vectors (transparency-dev/merkle, testonly/constants.go).
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest_core import merkle

INPUTS = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    bytes(range(0x50, 0x58)),
    bytes(range(0x60, 0x70)),
]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


# --- the reference, from the RFC's text --------------------------------------------------


def ref_leaf(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def ref_node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def ref_k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def ref_mth(leaves: list[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return ref_leaf(leaves[0])
    k = ref_k(n)
    return ref_node(ref_mth(leaves[:k]), ref_mth(leaves[k:]))


def ref_path(m: int, leaves: list[bytes]) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = ref_k(n)
    if m < k:
        return [*ref_path(m, leaves[:k]), ref_mth(leaves[k:])]
    return [*ref_path(m - k, leaves[k:]), ref_mth(leaves[:k])]


def ref_subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [ref_mth(leaves)]
    k = ref_k(n)
    if m <= k:
        return [*ref_subproof(m, leaves[:k], whole), ref_mth(leaves[k:])]
    return [*ref_subproof(m - k, leaves[k:], False), ref_mth(leaves[:k])]


def ref_proof(m: int, leaves: list[bytes]) -> list[bytes]:
    return ref_subproof(m, leaves, True)


def ref_verify_inclusion(index, size, leaf_hash, path, root) -> bool:
    # RFC 9162 section 2.1.3.2, step by step.
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf_hash
    for p in path:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            r = ref_node(p, r)
            if fn % 2 == 0:
                while not (fn % 2 == 1 or fn == 0):
                    fn, sn = fn // 2, sn // 2
        else:
            r = ref_node(r, p)
        fn, sn = fn // 2, sn // 2
    return sn == 0 and r == root


def ref_verify_consistency(first, second, first_hash, second_hash, path) -> bool:
    # RFC 9162 section 2.1.4.2, step by step.
    if not path:
        return False
    path = list(path)
    if first & (first - 1) == 0:
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    while fn % 2 == 1:
        fn, sn = fn // 2, sn // 2
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr, sr = ref_node(c, fr), ref_node(c, sr)
            if fn % 2 == 0:
                while not (fn % 2 == 1 or fn == 0):
                    fn, sn = fn // 2, sn // 2
        else:
            sr = ref_node(sr, c)
        fn, sn = fn // 2, sn // 2
    return fr == first_hash and sr == second_hash and sn == 0


# --- a node store built by appending, as the service does ------------------------------


class Store:
    """Leaves appended one by one with merkle.append_leaf; the nodes kept in a dict."""

    def __init__(self, leaves: list[bytes]) -> None:
        self.nodes: dict[tuple[int, int], bytes] = {}
        self.frontier: tuple[bytes, ...] = ()
        self.size = 0
        for data in leaves:
            appended = merkle.append_leaf(self.size, self.frontier, merkle.leaf_hash(data))
            assert appended.index == self.size
            for level, index, value in appended.nodes:
                assert (level, index) not in self.nodes
                self.nodes[(level, index)] = value
            self.frontier = appended.frontier
            self.size += 1

    def node(self, level: int, index: int) -> bytes:
        return self.nodes[(level, index)]

    def root(self, size: int) -> bytes:
        return merkle.subtree_root(0, size, self.node)


def leaves_of(n: int) -> list[bytes]:
    return [f"leaf {i}".encode() for i in range(n)]


# --- tests -----------------------------------------------------------------------------


def test_reference_reproduces_the_ct_vectors():
    assert [ref_mth(INPUTS[:n]).hex() for n in range(9)] == ROOTS


def test_roots_match_the_ct_vectors_at_every_size():
    store = Store(INPUTS)
    assert [store.root(n).hex() for n in range(9)] == ROOTS
    assert merkle.frontier_root(store.frontier).hex() == ROOTS[8]
    assert merkle.frontier_root(()).hex() == ROOTS[0]


def test_leaf_and_node_hashes_are_domain_separated():
    assert merkle.leaf_hash(b"").hex() == ROOTS[1]
    assert merkle.node_hash(b"a" * 32, b"b" * 32) != merkle.leaf_hash(b"a" * 32 + b"b" * 32)


@pytest.mark.parametrize("size", range(1, 34))
def test_every_inclusion_path_matches_the_reference_and_verifies(size):
    leaves = leaves_of(size)
    store = Store(leaves)
    root = ref_mth(leaves)
    assert store.root(size) == root
    for index in range(size):
        path = merkle.inclusion_path(index, size, store.node)
        assert path == ref_path(index, leaves)
        leaf = ref_leaf(leaves[index])
        assert ref_verify_inclusion(index, size, leaf, path, root)
        assert merkle.verify_inclusion(leaf, index, size, path, root)
        assert not merkle.verify_inclusion(ref_leaf(b"forged"), index, size, path, root)
        if size > 1:
            assert not merkle.verify_inclusion(leaf, (index + 1) % size, size, path, root)
            assert not merkle.verify_inclusion(leaf, index, size, path[:-1], root)


@pytest.mark.parametrize("second", range(1, 34))
def test_every_consistency_proof_matches_the_reference_and_verifies(second):
    leaves = leaves_of(second)
    store = Store(leaves)
    second_root = ref_mth(leaves)
    for first in range(1, second + 1):
        proof = merkle.consistency_path(first, second, store.node)
        assert proof == ref_proof(first, leaves)
        first_root = ref_mth(leaves[:first])
        assert merkle.verify_consistency(first, second, first_root, second_root, proof)
        if first < second:
            assert ref_verify_consistency(first, second, first_root, second_root, proof)
            forked = ref_mth([*leaves[: first - 1], b"other"])
            assert not merkle.verify_consistency(first, second, forked, second_root, proof)
            assert not ref_verify_consistency(first, second, forked, second_root, proof)
            assert not merkle.verify_consistency(first, second, first_root, second_root, [])


def test_bad_arguments_are_refused():
    store = Store(leaves_of(4))
    with pytest.raises(ValueError, match="index must be below tree_size"):
        merkle.inclusion_path(4, 4, store.node)
    with pytest.raises(ValueError, match="first must not exceed second"):
        merkle.consistency_path(5, 4, store.node)
    with pytest.raises(ValueError, match="frontier does not match"):
        merkle.append_leaf(3, (), merkle.leaf_hash(b"x"))
    assert not merkle.verify_inclusion(merkle.leaf_hash(b"x"), 4, 4, [], store.root(4))
    assert not merkle.verify_consistency(3, 2, store.root(3), store.root(2), [b"x" * 32])


def test_needed_nodes_names_every_node_a_proof_reads():
    store = Store(leaves_of(1000))
    wanted = merkle.needed_nodes(lambda node: merkle.inclusion_path(617, 1000, node))
    only = {key: store.nodes[key] for key in wanted}
    path = merkle.inclusion_path(617, 1000, lambda level, index: only[(level, index)])
    assert path == merkle.inclusion_path(617, 1000, store.node)
    assert len(wanted) <= 2 * (1000).bit_length()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_proofs_verify_for_any_sizes(data):
    second = data.draw(st.integers(min_value=1, max_value=300), label="second")
    first = data.draw(st.integers(min_value=1, max_value=second), label="first")
    index = data.draw(st.integers(min_value=0, max_value=first - 1), label="index")
    leaves = leaves_of(second)
    store = Store(leaves)
    first_root, second_root = ref_mth(leaves[:first]), ref_mth(leaves)
    assert store.root(first) == first_root and store.root(second) == second_root
    path = merkle.inclusion_path(index, first, store.node)
    assert ref_verify_inclusion(index, first, ref_leaf(leaves[index]), path, first_root)
    proof = merkle.consistency_path(first, second, store.node)
    assert proof == ref_proof(first, leaves)
    assert merkle.verify_consistency(first, second, first_root, second_root, proof)
    # The RFC's frontier: the root from the stored subtrees alone.
    frontier = [store.node(level, index) for level, index in merkle.frontier_nodes(second)]
    assert merkle.frontier_root(frontier) == second_root
