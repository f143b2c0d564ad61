"""SharedState, moved here from verification with its table (verification_sharedstate):
state only, nothing in the database changes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("attest", "0001_rate_count"),
        ("verification", "0006_sharedstate_to_attest"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SharedState",
                    fields=[
                        (
                            "key",
                            models.CharField(max_length=200, primary_key=True, serialize=False),
                        ),
                        ("value", models.JSONField()),
                        ("expires_at", models.DateTimeField(db_index=True)),
                    ],
                    options={"db_table": "verification_sharedstate"},
                )
            ],
            database_operations=[],
        )
    ]
