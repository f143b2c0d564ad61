"""Declared predicates: a project's own predicates beside the built-in ones (issue 24).

Predicate names grow to 64 characters (``^[a-z][a-z0-9_]{0,63}$``). On PostgreSQL the
two columns are widened in place (the exclusion constraint of 0002 follows the column);
SQLite does not enforce a varchar length, and Django's table rebuild there would drop
the append-only triggers of 0003, so only the migration state changes on SQLite.
"""

import django.db.models.deletion
from django.db import migrations, models

WIDEN = [
    "ALTER TABLE citations_fact ALTER COLUMN predicate TYPE varchar(64)",
    "ALTER TABLE citations_factversion ALTER COLUMN predicate TYPE varchar(64)",
]
NARROW = [
    "ALTER TABLE citations_fact ALTER COLUMN predicate TYPE varchar(40)",
    "ALTER TABLE citations_factversion ALTER COLUMN predicate TYPE varchar(40)",
]


def widen(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in WIDEN:
            schema_editor.execute(statement)


def narrow(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in NARROW:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("citations", "0009_observation_occurred_offset")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(widen, narrow)],
            state_operations=[
                migrations.AlterField(
                    model_name="fact", name="predicate", field=models.CharField(max_length=64)
                ),
                migrations.AlterField(
                    model_name="factversion",
                    name="predicate",
                    field=models.CharField(max_length=64),
                ),
            ],
        ),
        migrations.CreateModel(
            name="DeclaredPredicate",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64)),
                (
                    "cardinality",
                    models.CharField(choices=[("one", "one"), ("many", "many")], max_length=4),
                ),
                ("description", models.TextField(blank=True)),
                ("declared_by", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField()),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="predicates",
                        to="citations.project",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "name"), name="predicate_unique_name"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("cardinality__in", ["one", "many"])),
                        name="predicate_cardinality",
                    ),
                ],
            },
        ),
    ]
