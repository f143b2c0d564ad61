"""The audit log refuses TRUNCATE on PostgreSQL.

0002's row trigger refuses UPDATE and DELETE, but TRUNCATE fires no row trigger, so the
application's database user could empty the log in one statement; a statement trigger
refuses it. SQLite has no TRUNCATE: its ``DELETE`` without a ``WHERE`` fires 0002's row
trigger, which refuses it.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # 0002's function raises whatever fires it, so a statement trigger can call it too.
        schema_editor.execute(
            "CREATE TRIGGER citations_auditevent_no_truncate BEFORE TRUNCATE "
            "ON citations_auditevent FOR EACH STATEMENT EXECUTE FUNCTION "
            "citations_audit_append_only()"
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "DROP TRIGGER citations_auditevent_no_truncate ON citations_auditevent"
        )


class Migration(migrations.Migration):
    dependencies = [("citations", "0011_websource_receipt_log_index")]

    operations = [migrations.RunPython(forwards, backwards)]
