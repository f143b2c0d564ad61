"""Reads of the ledger that leave an audit event: resolve, recall, the inventory, the change
feed and the subjects."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from psycopg import IsolationLevel

from attest.metrics import LEDGER_RECALLS, LEDGER_RESOLVES
from attest.replicas import replica_reads
from citations.models import Project
from citations.selectors import (
    INVENTORY_DEFAULT_LIMIT,
    RECALL_DEFAULT_LIMIT,
    RESOLVE_DEFAULT_LIMIT,
    FactPage,
    ResolvedCitation,
    fact_inventory,
    recalled_facts,
    resolved_citation,
)
from citations.selectors.changes import (
    CHANGES_DEFAULT_LIMIT,
    SUBJECTS_DEFAULT_LIMIT,
    ChangePage,
    SubjectPage,
    change_feed,
    subject_list,
)
from citations.services.audit import audit_record
from citations.services.predicates import predicate_cardinality


@contextmanager
def read_snapshot(
    *, replica_for: Project | None = None, one_statement: bool = False
) -> Iterator[None]:
    """One transaction whose reads all see the same committed state.

    On PostgreSQL the default READ COMMITTED lets each statement see a newer
    state, so a fact and its evidence could come from two moments; REPEATABLE
    READ makes a resolve page the consistent snapshot the seed promises. The level
    travels in the transaction's own BEGIN (no statement of its own). Inside an
    enclosing transaction (tests, or a caller's own) that one decides. SQLite
    transactions are serialised already.

    ``one_statement``: the block reads with a single statement on PostgreSQL (ranked
    recall), which sees one state by itself; no transaction is opened for it (its BEGIN
    and COMMIT would be two of the request's round trips). On SQLite the block is a
    transaction all the same.

    With ``replica_for``, a read replica that has replayed the project's last write may
    serve the block (attest.replicas); a block that writes must not pass it.
    """
    if replica_for is None:
        with _snapshot(DEFAULT_DB_ALIAS, one_statement):
            yield
        return
    with replica_reads(str(replica_for.pk)) as alias, _snapshot(alias, one_statement):
        yield


@contextmanager
def _snapshot(alias: str, one_statement: bool) -> Iterator[None]:
    connection = connections[alias]
    if connection.in_atomic_block or connection.vendor != "postgresql":
        with transaction.atomic(using=alias):
            yield
        return
    if one_statement:
        yield
        return
    connection.ensure_connection()
    driver = connection.connection
    saved = driver.isolation_level, driver.read_only
    driver.isolation_level, driver.read_only = IsolationLevel.REPEATABLE_READ, True
    try:
        with transaction.atomic(using=alias):
            yield
    finally:
        if not driver.closed:
            driver.isolation_level, driver.read_only = saved


def citation_resolve(
    *,
    project: Project,
    fact_id: uuid.UUID,
    actor: str,
    limit: int = RESOLVE_DEFAULT_LIMIT,
    known_at: datetime | None = None,
    after: int = 0,
    request_id: str = "",
) -> ResolvedCitation:
    """Resolve a fact ID (see selectors.resolved_citation) and audit how many sources left."""
    with read_snapshot(replica_for=project):
        resolved = resolved_citation(
            project=project, fact_id=fact_id, limit=limit, known_at=known_at, after=after
        )
    audit_record(
        project=project,
        operation="citation.resolve",
        actor=actor,
        object_ids=[str(resolved.id)],
        source_count=resolved.source_count,
        request_id=request_id,
    )
    LEDGER_RESOLVES.inc()
    return resolved


def facts_recall(
    *,
    project: Project,
    subject_id: str,
    actor: str,
    predicate: str | None = None,
    query: str | None = None,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    limit: int = RECALL_DEFAULT_LIMIT,
    after: Any = None,
    request_id: str = "",
) -> FactPage:
    """Recall facts (see selectors.recalled_facts; ranked when there is a ``query``) and
    audit which IDs were returned."""
    if predicate is not None:
        predicate_cardinality(project=project, name=predicate)  # 400 for an unknown one
    # Ranked on PostgreSQL, the recall is one statement (citations.selectors.ranked).
    with read_snapshot(replica_for=project, one_statement=bool(query)):
        page = recalled_facts(
            project=project,
            subject_id=subject_id,
            predicate=predicate,
            query=query,
            valid_at=valid_at,
            known_at=known_at,
            limit=limit,
            after=after,
        )
    audit_record(
        project=project,
        operation="facts.recall",
        actor=actor,
        object_ids=[str(fact.id) for fact in page.facts],
        source_count=len(page.facts),
        request_id=request_id,
    )
    LEDGER_RECALLS.inc()
    return page


def facts_list(
    *,
    project: Project,
    actor: str,
    subject_id: str | None = None,
    predicate: str | None = None,
    status: str | None = None,
    limit: int = INVENTORY_DEFAULT_LIMIT,
    after: Any = None,
    request_id: str = "",
) -> FactPage:
    """The record inventory (see selectors.fact_inventory), audited like recall."""
    if predicate is not None:
        predicate_cardinality(project=project, name=predicate)  # 400 for an unknown one
    with read_snapshot(replica_for=project):
        page = fact_inventory(
            project=project,
            subject_id=subject_id,
            predicate=predicate,
            status=status,
            limit=limit,
            after=after,
        )
    audit_record(
        project=project,
        operation="facts.list",
        actor=actor,
        object_ids=[str(fact.id) for fact in page.facts],
        source_count=len(page.facts),
        request_id=request_id,
    )
    return page


def changes_list(
    *,
    project: Project,
    actor: str,
    subject_id: str | None = None,
    limit: int = CHANGES_DEFAULT_LIMIT,
    after: Any = None,
    request_id: str = "",
) -> ChangePage:
    """The change feed (see selectors.changes.change_feed), audited with the facts it names."""
    with read_snapshot(replica_for=project):
        page = change_feed(project=project, subject_id=subject_id, limit=limit, after=after)
    audit_record(
        project=project,
        operation="changes.list",
        actor=actor,
        object_ids=list(dict.fromkeys(str(change.fact_id) for change in page.changes)),
        source_count=len(page.changes),
        request_id=request_id,
    )
    return page


def subjects_list(
    *,
    project: Project,
    actor: str,
    limit: int = SUBJECTS_DEFAULT_LIMIT,
    after: Any = None,
    request_id: str = "",
) -> SubjectPage:
    """The project's subjects (see selectors.changes.subject_list), audited by their row IDs."""
    with read_snapshot(replica_for=project):
        page = subject_list(project=project, limit=limit, after=after)
    audit_record(
        project=project,
        operation="subjects.list",
        actor=actor,
        object_ids=[str(subject.pk) for subject in page.subjects],
        source_count=len(page.subjects),
        request_id=request_id,
    )
    return page
