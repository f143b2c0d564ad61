"""An answered call's record keeps its receipt's leaf index in the transparency log."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("verification", "0003_batches"),
    ]

    operations = [
        migrations.AddField(
            model_name="verification",
            name="receipt_log_index",
            field=models.BigIntegerField(blank=True, null=True),
        ),
    ]
