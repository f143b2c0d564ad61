"""The admin's plural for log leaves (it read "Log leafs")."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("receipts", "0004_log_no_truncate_no_gap"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="logleaf",
            options={"verbose_name": "log leaf", "verbose_name_plural": "log leaves"},
        ),
    ]
