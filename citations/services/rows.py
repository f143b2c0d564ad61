"""Ledger writes as plain SQL statements, sent to the database together.

A one-message ingest wrote its rows in four ORM calls, each compiled anew and each a
round trip. Here an insert is built from the model's own fields (each value prepared by
its field, ``pre_save`` then ``get_db_prep_save``, as the ORM's insert prepares it) and
the statements of one step go in one ``execute`` where the driver takes several at once
(psycopg 3 binding parameters on the client, Django's default): the database runs them
in order, each with its own snapshot, as if sent one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import AutoField, Field, Model

Statement = tuple[str, list[Any]]


def inserts(objs: Sequence[Model], *, suffix: str = "") -> list[Statement]:
    """INSERTs of ``objs`` (rows of one model, split as ``bulk_create`` splits them at the
    backend's parameter limit); an automatic key left unset is the database's.

    The rows are marked as stored, as ``bulk_create`` marks them; their automatic keys,
    which this does not read back, stay unset.
    """
    if not objs:
        return []
    meta = type(objs[0])._meta
    automatic = isinstance(meta.pk, AutoField) and all(obj.pk is None for obj in objs)
    fields = [field for field in meta.concrete_fields if not (automatic and field.primary_key)]
    quote = connection.ops.quote_name
    names = ", ".join(quote(str(f.get_attname_column()[1])) for f in fields)
    head = f"INSERT INTO {quote(meta.db_table)} ({names})"
    # The connection itself, not the thread-local proxy: it is asked once per value.
    db = connections[DEFAULT_DB_ALIAS]
    values = [
        [field.get_db_prep_save(field.pre_save(obj, True), db) for field in fields] for obj in objs
    ]
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias
    if connection.vendor == "postgresql":
        # One array a column, as Django's own bulk insert does there: the statement's text
        # stays short whatever the number of rows, so the driver parses it once and caches it.
        arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in fields)
        columns = [list(column) for column in zip(*values, strict=True)]
        return [(f"{head} SELECT * FROM UNNEST({arrays}){suffix}", columns)]
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    size = max(1, connection.ops.bulk_batch_size(fields, objs))
    statements = []
    for start in range(0, len(objs), size):
        chunk = values[start : start + size]
        params = [value for row_values in chunk for value in row_values]
        statements.append((f"{head} VALUES {', '.join([row] * len(chunk))}{suffix}", params))
    return statements


def close_known(
    model: type[Model], *, project_id: int, pks: Sequence[Any], now: datetime, **also: str
) -> Statement:
    """Close the known interval of the rows ``pks`` still open (and set ``also``).

    Names the columns as written here: ``known_until``, ``project_id``, ``id`` and those
    of ``also`` (the ledger's tables name their columns after their fields).
    """
    quote = connection.ops.quote_name
    known_until = model._meta.get_field("known_until")
    assert isinstance(known_until, Field)
    sets = ", ".join(f"{quote(column)} = %s" for column in ["known_until", *also])
    keys = ", ".join(["%s"] * len(pks))
    return (
        f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {quote('project_id')} = %s "
        f"AND {quote('id')} IN ({keys}) AND {quote('known_until')} IS NULL",
        [known_until.get_db_prep_save(now, connection), *also.values(), project_id, *pks],
    )


def execute_together(statements: Sequence[Statement]) -> list[list[tuple]]:
    """Run ``statements`` in order; the rows each returned (empty for one that returns none).

    In one round trip on PostgreSQL with client-side binding, one by one otherwise.
    """
    results: list[list[tuple]] = []
    with connection.cursor() as cursor:
        if len(statements) > 1 and sends_statements_together():
            cursor.execute(
                ";\n".join(sql for sql, _ in statements),
                [value for _, params in statements for value in params],
            )
            while True:
                results.append(cursor.fetchall() if cursor.description else [])
                if not cursor.nextset():
                    break
            return results
        for sql, params in statements:
            cursor.execute(sql, params)
            results.append(cursor.fetchall() if cursor.description else [])
    return results


def sends_statements_together() -> bool:
    """Whether one ``execute`` may hold several statements: PostgreSQL with psycopg 3's
    client-side binding cursors (Django's default unless ``server_side_binding``)."""
    return connection.vendor == "postgresql" and not connection.settings_dict.get(
        "OPTIONS", {}
    ).get("server_side_binding")
