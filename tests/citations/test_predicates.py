"""The built-in predicate table: one entry per predicate, agreeing with the extractor."""

import re

from citations.extract.extractor import CARDINALITY
from citations.extract.predicates import (
    BUILTIN_NAMES,
    BUILTIN_PREDICATES,
    CARDINALITIES,
    FUNCTIONAL,
    builtin_predicate,
    cardinality_of,
    is_builtin,
)


def test_every_entry_is_complete_and_named_like_a_declared_predicate():
    assert len(BUILTIN_NAMES) == len(set(BUILTIN_NAMES)) >= 25
    for predicate in BUILTIN_PREDICATES:
        assert re.fullmatch(r"[a-z][a-z0-9_]{0,63}", predicate.name)
        assert predicate.cardinality in CARDINALITIES
        assert predicate.description.endswith(".")
        assert predicate.example.strip()


def test_accessors_agree_with_the_table():
    assert builtin_predicate("lives_in").cardinality == "one"
    assert builtin_predicate("prefers").cardinality == "many"
    assert builtin_predicate("prefer") is None
    assert is_builtin("speaks") and not is_builtin("speak")
    assert cardinality_of("works_at") == "one"
    assert {p.name for p in BUILTIN_PREDICATES if p.cardinality == "one"} == FUNCTIONAL
    assert {"lives_in", "works_at", "name"} <= FUNCTIONAL


def test_the_extractor_reads_only_table_predicates_with_the_table_cardinality():
    for name, cardinality in CARDINALITY.items():
        assert cardinality_of(name) == cardinality
