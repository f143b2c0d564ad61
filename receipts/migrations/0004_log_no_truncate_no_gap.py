"""The transparency log refuses TRUNCATE, and takes a leaf or node only at its next index.

0002's row triggers refuse UPDATE and DELETE, but PostgreSQL's TRUNCATE fires no row
trigger: a statement trigger refuses it (SQLite has no TRUNCATE; its ``DELETE`` without a
``WHERE`` fires 0002's row triggers). An INSERT at any free index was also taken, so a leaf
written at index 999999 left a gap that no proof covers: on both databases a leaf is
taken only at the log's size (the largest index plus one, the index ``log_append`` reads),
and a subtree hash only at the next index of its level (an append completes each level's
subtrees in order). Both checks read one end of a primary key index.
"""

from django.db import migrations

MESSAGE = "the transparency log is append-only"
GAP = "the transparency log takes a leaf or node only at its next index"

# The next index: of the leaves, or of the nodes of the new row's level.
NEXT_LEAF = 'SELECT coalesce(max(l."index") + 1, 0) FROM receipts_logleaf AS l'
NEXT_NODE = (
    'SELECT coalesce(max(n."index") + 1, 0) FROM receipts_lognode AS n WHERE n.level = NEW.level'
)
CHECKS = {"receipts_logleaf": NEXT_LEAF, "receipts_lognode": NEXT_NODE}

PG = [
    # 0002's function raises whatever fires it, so a statement trigger can call it too.
    *(
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION receipts_log_append_only()"
        for table in CHECKS
    ),
    *(
        f"""
CREATE FUNCTION {table}_next_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW."index" IS DISTINCT FROM ({check}) THEN
        RAISE EXCEPTION '{GAP}';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER {table}_next_index BEFORE INSERT ON {table}
FOR EACH ROW EXECUTE FUNCTION {table}_next_index();
"""
        for table, check in CHECKS.items()
    ),
]

SQLITE = [
    f"""CREATE TRIGGER {table}_next_index BEFORE INSERT ON {table}
    WHEN NEW."index" IS NOT ({check})
    BEGIN SELECT RAISE(ABORT, '{GAP}'); END"""
    for table, check in CHECKS.items()
]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in {"postgresql": PG, "sqlite": SQLITE}.get(vendor, []):
        schema_editor.execute(statement)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in CHECKS:
        if vendor == "postgresql":
            schema_editor.execute(f"DROP TRIGGER {table}_no_truncate ON {table}")
            schema_editor.execute(f"DROP TRIGGER {table}_next_index ON {table}")
            schema_editor.execute(f"DROP FUNCTION {table}_next_index()")
        elif vendor == "sqlite":
            schema_editor.execute(f"DROP TRIGGER {table}_next_index")


class Migration(migrations.Migration):
    dependencies = [("receipts", "0003_log_frontier_function")]

    operations = [migrations.RunPython(forwards, backwards)]
