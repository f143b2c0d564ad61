"""Keep the sender's UTC offset of a message's time, so a rebuild reads its relative
dates ("yesterday") on the sender's calendar as the first ingest did. Null on messages
stored before: their offset is lost, and they are read in UTC as before."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("citations", "0008_web_evidence"),
    ]

    operations = [
        migrations.AddField(
            model_name="observation",
            name="occurred_offset",
            field=models.IntegerField(blank=True, null=True),
        ),
    ]
