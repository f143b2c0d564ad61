"""PostgreSQL: the log's size and frontier read by one function that first takes the
appenders' lock.

An append on PostgreSQL took a savepoint (so that one that raced another to an index could
roll back and try again), read the size and frontier, wrote, and released the savepoint:
four round trips, the read planned afresh each time. The function takes a transaction-level
advisory lock, then reads with a snapshot taken after the lock (a PL/pgSQL statement in READ
COMMITTED takes its own), so the size it returns is final until this transaction ends: no
race, no savepoint, and the read's plan is kept by the session. SQLite appends take turns on
the transaction's write lock, as before.
"""

from django.db import migrations

# The lock's key: any constant no other part of the project takes (ASCII "ATTLOG").
LOG_LOCK_KEY = 0x4154544C4F47

FUNCTION = f"""
CREATE FUNCTION receipts_log_frontier() RETURNS TABLE (n bigint, level smallint, hash bytea)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({LOG_LOCK_KEY});
    RETURN QUERY
    WITH size AS (SELECT coalesce(max(l."index") + 1, 0) AS n FROM receipts_logleaf AS l),
    keys AS (
        SELECT g.l AS level, (size.n >> g.l) - 1 AS idx
        FROM size, generate_series(0, 62) AS g(l)
        WHERE (size.n >> g.l) & 1 = 1
    )
    SELECT size.n, node.level, node.hash FROM size LEFT JOIN (
        keys JOIN receipts_lognode AS node
            ON node.level = keys.level AND node."index" = keys.idx
    ) ON true;
END
$$;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION receipts_log_frontier()")


class Migration(migrations.Migration):
    dependencies = [("receipts", "0002_transparency_log")]

    operations = [migrations.RunPython(forwards, backwards)]
