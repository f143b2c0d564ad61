"""Upkeep of the full-text index that its triggers (migration 0012) cannot do row by row."""

from __future__ import annotations

from django.db import connection


def search_index_purge() -> None:
    """Rewrite SQLite's FTS5 index so that no deleted or replaced text stays in it.

    FTS5 deletes by writing a delete marker: the old terms stay in the index's segment
    rows (``citations_factsearch_fts_data``) until segments merge, so an erased
    statement would still be readable there. ``optimize`` merges every segment into one
    and drops what was deleted. An erasure calls it in its own transaction. PostgreSQL
    removes the row and its GIN entries outright (space is reclaimed by vacuum, as for
    every erased column).
    """
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO citations_factsearch_fts (citations_factsearch_fts) VALUES ('optimize')"
        )
