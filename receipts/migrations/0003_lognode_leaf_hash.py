"""A receipt's leaf found by its hash: web evidence names the leaf of its receipt."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("receipts", "0002_transparency_log"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="lognode",
            index=models.Index(
                condition=models.Q(("level", 0)), fields=["hash"], name="lognode_leaf_hash"
            ),
        ),
    ]
