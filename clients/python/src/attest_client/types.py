"""The answers' shapes, as the service's OpenAPI schema (/v1/openapi.json) gives them.

Top-level fields only; nested objects are plain dicts. ``total=False``: a field the
schema marks optional (``rail`` on a paid call, ``trial_calls_left`` on a trial one) may
be absent.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Paid(TypedDict, total=False):
    receipt: str
    receipt_log_index: int  # the receipt's leaf in the transparency log
    tier: str  # "trial", "paid" or "sample"
    rail: str
    network: str
    trial_calls_left: int


class VerifyQuoteAnswer(Paid, total=False):
    result: dict[str, Any]
    page: dict[str, Any]
    injection_flags: list[str]
    advice: str


class VerifyQuotesAnswer(Paid, total=False):
    results: list[dict[str, Any]]
    page: dict[str, Any]
    injection_flags: list[str]
    advice: str
    summary: dict[str, int]
    note: str


class VerifyCitationsAnswer(Paid, total=False):
    results: list[dict[str, Any]]
    pages: list[dict[str, Any]]
    summary: dict[str, int]
    note: str


class FetchAnswer(Paid, total=False):
    page: dict[str, Any]
    text: str
    normalised_sha256: str | None
    injection_flags: list[str]
    advice: str
    pdf_pages: list[dict[str, Any]]


class ReceiptVerifyAnswer(TypedDict, total=False):
    valid: bool
    kid: str | None
    claims: dict[str, Any]
    issued_at: str
    request_id: str
    client_request_id: str
    key_state: str
    checks: dict[str, Any]
    reason: str
    message: str


class Jwks(TypedDict):
    keys: list[dict[str, Any]]


class ObservationsAnswer(TypedDict):
    observations: list[dict[str, Any]]
    facts: list[dict[str, Any]]


class Fact(TypedDict, total=False):
    id: str
    version: str
    subject: str
    predicate: str
    value: str
    statement: str
    source_role: str
    status: str
    valid: dict[str, Any]
    known: dict[str, Any]
    superseded_by: str | None
    supersession_source_observation_id: str | None
    retraction: dict[str, Any] | None
    generation: int
    reinterpreted_by: int | None
    evidence: list[dict[str, Any]]
    next: dict[str, Any]
    score: float  # a recall with ``query``: relevance from 0 to 1


class FactPage(TypedDict, total=False):
    facts: list[Fact]
    next: dict[str, Any]


class Predicate(TypedDict):
    name: str
    cardinality: str  # "one" | "many"
    builtin: bool
    description: str
    synonyms: list[str]


class Change(TypedDict):
    id: int  # the change's place in the project's commit order
    type: str  # created | superseded | retracted | reinterpreted | erased
    fact_id: str
    subject: str | None  # None once the subject is erased
    predicate: str | None  # None once the fact is erased
    at: str


class ChangePage(TypedDict, total=False):
    changes: list[Change]
    next: dict[str, Any]  # after the last change: pass as ``after``, now or later


class Subject(TypedDict):
    subject: str
    facts: int
    last_observed_at: str | None


class SubjectPage(TypedDict, total=False):
    subjects: list[Subject]
    next: dict[str, Any]


class PredicateList(TypedDict):
    predicates: list[Predicate]


class Rebuild(TypedDict):
    generation: dict[str, Any]
    retired: int
    admitted: int


class Erasure(TypedDict):
    erased: dict[str, int]


class TreeHead(TypedDict):
    tree_size: int
    root_hash: str  # base64
    timestamp: int  # milliseconds since the epoch
    signature: str  # compact JWS over the three fields above


class InclusionProof(TypedDict):
    leaf_index: int
    tree_size: int
    audit_path: list[str]


class ConsistencyProof(TypedDict):
    first: int
    second: int
    proof: list[str]


class CreditMovement(TypedDict, total=False):
    type: str  # top_up, hold, draw or release
    amount: str
    at: str
    route: str
    request_id: str


class CreditStatement(TypedDict, total=False):
    balance: str
    currency: str
    movements: list[CreditMovement]
    next: str


class CreditsBought(Paid, total=False):
    credential: str  # a new project's, shown once
    project: str
    balance: str
    currency: str
