"""Writes to the fact ledger, one module per concern; the names callers use, re-exported."""

from citations.services.audit import audit_chain_intact, audit_digest, audit_record
from citations.services.ingest import (
    IngestResult,
    MessageConflict,
    MessageIn,
    observations_ingest,
)
from citations.services.reads import citation_resolve, facts_recall, read_snapshot
from citations.services.tenancy import (
    credential_create,
    credential_revoke,
    project_create,
    project_set_suspended,
)

__all__ = [
    "IngestResult",
    "MessageConflict",
    "MessageIn",
    "audit_chain_intact",
    "audit_digest",
    "audit_record",
    "citation_resolve",
    "credential_create",
    "credential_revoke",
    "facts_recall",
    "observations_ingest",
    "project_create",
    "project_set_suspended",
    "read_snapshot",
]
