"""Look for a text in every column of every table of the test database, on either engine."""

from __future__ import annotations

import json

from django.db import connection


def _as_bytes(value) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False).encode()
    return str(value).encode()


def columns_holding(*needles: str) -> list[str]:
    """``table.column`` of every stored value containing a needle (case-insensitively)."""
    wanted = [needle.casefold().encode() for needle in needles]
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [
                column.name
                for column in connection.introspection.get_table_description(cursor, table)
            ]
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if value is None:
                        continue
                    stored = _as_bytes(value).lower()
                    if any(needle in stored for needle in wanted):
                        found.append(f"{table}.{column}")
    return sorted(set(found))
