"""Web evidence keeps its receipt's leaf index in the transparency log.

Rows stored before are filled in from the log by the receipt's leaf hash (RFC 9162:
SHA-256 of 0x00 and the receipt's ASCII bytes); a receipt signed before the log began
has no leaf and keeps null.
"""

import hashlib

from django.db import migrations, models


def fill_in(apps, schema_editor):
    web_source = apps.get_model("citations", "WebSource")
    log_node = apps.get_model("receipts", "LogNode")
    for web in web_source.objects.filter(receipt_log_index__isnull=True).iterator():
        leaf_hash = hashlib.sha256(b"\x00" + web.receipt.encode("ascii")).digest()
        index = (
            log_node.objects.filter(level=0, hash=leaf_hash)
            .order_by("index")
            .values_list("index", flat=True)
            .first()
        )
        if index is not None:
            web_source.objects.filter(pk=web.pk).update(receipt_log_index=index)


class Migration(migrations.Migration):
    dependencies = [
        ("citations", "0010_declared_predicates"),
        ("receipts", "0003_lognode_leaf_hash"),
    ]

    operations = [
        migrations.AddField(
            model_name="websource",
            name="receipt_log_index",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(fill_in, migrations.RunPython.noop),
    ]
