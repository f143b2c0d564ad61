"""PostgreSQL-only strength for the ledger, and append-only audit on both databases.

PostgreSQL: an exclusion constraint forbids two believed versions of one functional
predicate for one subject whose validity intervals overlap (inclusivity honoured).
SQLite has no such constraint; model constraint ``factversion_one_open_functional``
covers the open-ended case there. Both databases get triggers that refuse UPDATE and
DELETE on the audit log.
"""

from django.contrib.postgres.operations import BtreeGistExtension
from django.db import migrations

EXCLUSION = """
ALTER TABLE citations_factversion
ADD CONSTRAINT factversion_functional_no_overlap
EXCLUDE USING gist (
    subject_id WITH =,
    predicate WITH =,
    tstzrange(
        valid_from,
        valid_until,
        (CASE WHEN valid_from_inclusive THEN '[' ELSE '(' END)
        || (CASE WHEN valid_until_inclusive THEN ']' ELSE ')' END)
    ) WITH &&
) WHERE (functional AND known_until IS NULL)
"""

PG_AUDIT = """
CREATE FUNCTION citations_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only';
END
$$;
CREATE TRIGGER citations_auditevent_append_only
BEFORE UPDATE OR DELETE ON citations_auditevent
FOR EACH ROW EXECUTE FUNCTION citations_audit_append_only();
"""

SQLITE_AUDIT = [
    """CREATE TRIGGER citations_auditevent_no_update BEFORE UPDATE ON citations_auditevent
    BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END""",
    """CREATE TRIGGER citations_auditevent_no_delete BEFORE DELETE ON citations_auditevent
    BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END""",
]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(EXCLUSION)
        schema_editor.execute(PG_AUDIT)
    elif vendor == "sqlite":
        for statement in SQLITE_AUDIT:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE citations_factversion DROP CONSTRAINT factversion_functional_no_overlap"
        )
        schema_editor.execute(
            "DROP TRIGGER citations_auditevent_append_only ON citations_auditevent;"
            "DROP FUNCTION citations_audit_append_only();"
        )
    elif vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER citations_auditevent_no_update")
        schema_editor.execute("DROP TRIGGER citations_auditevent_no_delete")


class Migration(migrations.Migration):
    dependencies = [("citations", "0001_initial")]

    operations = [
        BtreeGistExtension(),
        migrations.RunPython(forwards, backwards),
    ]
