"""Web evidence keeps its receipt's leaf index in the transparency log.

Rows stored before are filled in from the log by the receipt's leaf hash (RFC 9162:
SHA-256 of 0x00 and the receipt's ASCII bytes), read in one pass over the leaf hashes;
a receipt signed before the log began has no leaf and keeps null.
"""

import hashlib

from django.db import migrations, models


def fill_in(apps, schema_editor):
    web_source = apps.get_model("citations", "WebSource")
    log_node = apps.get_model("receipts", "LogNode")
    by_hash: dict[bytes, list[int]] = {}
    for pk, receipt in web_source.objects.values_list("pk", "receipt").iterator():
        leaf_hash = hashlib.sha256(b"\x00" + receipt.encode("ascii")).digest()
        by_hash.setdefault(leaf_hash, []).append(pk)
    if not by_hash:
        return
    leaves = log_node.objects.filter(level=0).values_list("index", "hash").order_by("index")
    for index, value in leaves.iterator():
        pks = by_hash.pop(bytes(value), None)
        if pks:
            web_source.objects.filter(pk__in=pks).update(receipt_log_index=index)
        if not by_hash:
            return


class Migration(migrations.Migration):
    dependencies = [
        ("citations", "0010_declared_predicates"),
        ("receipts", "0002_transparency_log"),
    ]

    operations = [
        migrations.AddField(
            model_name="websource",
            name="receipt_log_index",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(fill_in, migrations.RunPython.noop),
    ]
