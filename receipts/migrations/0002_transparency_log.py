"""The transparency log: leaves and subtree hashes, append-only on both databases.

Triggers refuse UPDATE and DELETE on both tables (as the audit log's do), so neither
the ORM, the admin nor a stray SQL statement can rewrite or withdraw a logged receipt.
"""

from django.db import migrations, models

TABLES = ("receipts_logleaf", "receipts_lognode")
MESSAGE = "the transparency log is append-only"

PG_FUNCTION = f"""
CREATE FUNCTION receipts_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '{MESSAGE}';
END
$$;
"""


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FUNCTION)
        for table in TABLES:
            schema_editor.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION receipts_log_append_only()"
            )
    elif vendor == "sqlite":
        for table in TABLES:
            for action in ("update", "delete"):
                schema_editor.execute(
                    f"CREATE TRIGGER {table}_no_{action} BEFORE {action.upper()} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
                )


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in TABLES:
        if vendor == "postgresql":
            schema_editor.execute(f"DROP TRIGGER {table}_append_only ON {table}")
        elif vendor == "sqlite":
            schema_editor.execute(f"DROP TRIGGER {table}_no_update")
            schema_editor.execute(f"DROP TRIGGER {table}_no_delete")
    if vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION receipts_log_append_only()")


class Migration(migrations.Migration):
    dependencies = [
        ("receipts", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="LogNode",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "level",
                        "index",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("level", models.PositiveSmallIntegerField()),
                ("index", models.BigIntegerField()),
                ("hash", models.BinaryField(max_length=32)),
            ],
            options={
                "verbose_name": "log node",
            },
        ),
        migrations.CreateModel(
            name="LogLeaf",
            fields=[
                ("index", models.BigIntegerField(primary_key=True, serialize=False)),
                (
                    "kind",
                    models.CharField(
                        choices=[("receipt", "receipt"), ("audit_head", "audit chain head")],
                        max_length=16,
                    ),
                ),
                ("data", models.TextField()),
                ("audit_project", models.BigIntegerField(blank=True, null=True)),
                ("audit_seq", models.BigIntegerField(blank=True, null=True)),
                ("created_at", models.DateTimeField()),
            ],
            options={
                "verbose_name": "log leaf",
                "indexes": [
                    models.Index(
                        condition=models.Q(("audit_project__isnull", False)),
                        fields=["audit_project", "-audit_seq"],
                        name="logleaf_audit_head",
                    )
                ],
            },
        ),
        migrations.RunPython(forwards, backwards),
    ]
