"""Known time is append-only: a stored fact version may only have its known interval closed.

The one update allowed sets ``known_until`` once (with the status, retraction or
rebuild that explains it); every other column of a version is frozen, and a closed
version is frozen whole. Triggers enforce it on PostgreSQL and SQLite alike.
"""

from django.db import migrations

FROZEN = [
    "fact_id",
    "seq",
    "project_id",
    "subject_id",
    "predicate",
    "functional",
    "valid_from",
    "valid_until",
    "valid_from_inclusive",
    "valid_until_inclusive",
    "valid_precision",
    "known_from",
    "known_from_inclusive",
    "superseded_by_id",
    "supersession_source_observation_id",
]
MESSAGE = "fact versions are append-only: only closing the known interval is allowed"

PG = f"""
CREATE FUNCTION citations_factversion_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.known_until IS NOT NULL OR NEW.known_until IS NULL
       OR ({", ".join("NEW." + c for c in FROZEN)})
          IS DISTINCT FROM ({", ".join("OLD." + c for c in FROZEN)})
    THEN
        RAISE EXCEPTION '{MESSAGE}';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER citations_factversion_append_only
BEFORE UPDATE ON citations_factversion
FOR EACH ROW EXECUTE FUNCTION citations_factversion_append_only();
"""

SQLITE = f"""
CREATE TRIGGER citations_factversion_append_only BEFORE UPDATE ON citations_factversion
WHEN OLD.known_until IS NOT NULL OR NEW.known_until IS NULL
    OR {" OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in FROZEN)}
BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END
"""


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            "DROP TRIGGER citations_factversion_append_only ON citations_factversion;"
            "DROP FUNCTION citations_factversion_append_only();"
        )
    elif vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER citations_factversion_append_only")


class Migration(migrations.Migration):
    dependencies = [("citations", "0002_ledger_exclusion")]

    operations = [migrations.RunPython(forwards, backwards)]
