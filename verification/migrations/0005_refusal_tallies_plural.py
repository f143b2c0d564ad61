"""The admin's plural for refusal tallies (it read "Refusal tallys")."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("verification", "0004_verification_receipt_log_index"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="refusaltally",
            options={
                "ordering": ["-hour", "route", "error_code"],
                "verbose_name_plural": "refusal tallies",
            },
        ),
    ]
