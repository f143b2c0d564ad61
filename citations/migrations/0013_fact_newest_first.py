"""The admin lists facts newest first: an index in that order, so a page reads its rows
without sorting the table."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("citations", "0012_auditevent_no_truncate"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(fields=["-created_at", "-id"], name="fact_newest_first"),
        ),
    ]
