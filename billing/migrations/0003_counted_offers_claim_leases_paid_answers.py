"""Counted offer and refusal rows; leases, digests and the payment on claims; paid answers."""

import datetime

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, Min

IN_FLIGHT_GRACE = datetime.timedelta(minutes=10)


def _bucket(client_ip):
    from billing.trial import trial_bucket

    return trial_bucket(client_ip or "")


def count_rows(apps, schema_editor):
    """One row per minute and key, its count the number of old rows it stands for."""
    for name, keys in (
        ("Offer", ["minute", "route", "reason", "caller"]),
        ("Refusal", ["minute", "route", "reason", "payer", "caller"]),
    ):
        model = apps.get_model("billing", name)
        for row in model.objects.all().iterator():
            row.minute = row.created_at.replace(second=0, microsecond=0)
            row.caller = _bucket(row.client_ip)
            row.last_request_id = row.request_id
            row.save(update_fields=["minute", "caller", "last_request_id"])
        groups = model.objects.values(*keys).annotate(n=Count("id"), keep=Min("id"))
        for group in groups.filter(n__gt=1).iterator():
            match = {key: group[key] for key in keys}
            model.objects.filter(**match).exclude(pk=group["keep"]).delete()
            model.objects.filter(pk=group["keep"]).update(count=group["n"])


def lease_in_flight_claims(apps, schema_editor):
    """Claims caught mid-work or mid-settle by the upgrade get a lease that ends soon."""
    claim = apps.get_model("billing", "PaymentClaim")
    for row in claim.objects.filter(state__in=["claimed", "settling"]).iterator():
        row.lease_until = row.updated_at + IN_FLIGHT_GRACE
        row.save(update_fields=["lease_until"])


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0002_settlement_fields_unbounded"),
    ]

    operations = [
        # --- offers and refusals: counted per minute -----------------------------------
        migrations.AddField("offer", "minute", models.DateTimeField(null=True)),
        migrations.AddField("offer", "caller", models.CharField(blank=True, max_length=45)),
        migrations.AddField("offer", "count", models.PositiveIntegerField(default=1)),
        migrations.AddField(
            "offer", "last_request_id", models.CharField(blank=True, max_length=128)
        ),
        migrations.AddField("refusal", "minute", models.DateTimeField(null=True)),
        migrations.AddField("refusal", "caller", models.CharField(blank=True, max_length=45)),
        migrations.AddField("refusal", "count", models.PositiveIntegerField(default=1)),
        migrations.AddField(
            "refusal", "last_request_id", models.CharField(blank=True, max_length=128)
        ),
        migrations.RunPython(count_rows, migrations.RunPython.noop),
        migrations.RemoveField("offer", "created_at"),
        migrations.RemoveField("offer", "client_ip"),
        migrations.RemoveField("offer", "request_id"),
        migrations.RemoveField("refusal", "created_at"),
        migrations.RemoveField("refusal", "client_ip"),
        migrations.RemoveField("refusal", "request_id"),
        migrations.AlterField("offer", "minute", models.DateTimeField(db_index=True)),
        migrations.AlterField("refusal", "minute", models.DateTimeField(db_index=True)),
        migrations.AlterModelOptions("offer", options={"ordering": ["-minute"]}),
        migrations.AlterModelOptions("refusal", options={"ordering": ["-minute"]}),
        migrations.AddConstraint(
            "offer",
            models.UniqueConstraint(
                fields=("minute", "route", "reason", "caller"),
                name="billing_one_offer_row_per_minute",
            ),
        ),
        migrations.AddConstraint(
            "refusal",
            models.UniqueConstraint(
                fields=("minute", "route", "reason", "payer", "caller"),
                name="billing_one_refusal_row_per_minute",
            ),
        ),
        # --- claims: a lease, what they were for, and the payment to settle again -------
        migrations.AddField(
            "paymentclaim", "lease_until", models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(
            "paymentclaim", "request_digest", models.CharField(blank=True, max_length=64)
        ),
        migrations.AddField(
            "paymentclaim", "payment_digest", models.CharField(blank=True, max_length=64)
        ),
        migrations.AddField("paymentclaim", "payment", models.JSONField(blank=True, default=dict)),
        migrations.RunPython(lease_in_flight_claims, migrations.RunPython.noop),
        migrations.AddConstraint(
            "paymentclaim",
            models.CheckConstraint(
                condition=~models.Q(state__in=["claimed", "settling"])
                | models.Q(lease_until__isnull=False),
                name="billing_claim_in_flight_has_lease",
            ),
        ),
        migrations.AddIndex(
            "paymentclaim",
            models.Index(fields=["state", "lease_until"], name="billing_claim_lease"),
        ),
        # --- answers kept for retries ----------------------------------------------------
        migrations.CreateModel(
            name="PaidAnswer",
            fields=[
                (
                    "claim",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="answer",
                        serialize=False,
                        to="billing.paymentclaim",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("status_code", models.PositiveSmallIntegerField()),
                ("content_type", models.CharField(max_length=200)),
                ("body", models.BinaryField()),
                ("headers", models.JSONField(default=dict)),
                ("payment_response", models.TextField(blank=True)),
            ],
            options={"ordering": ["-created_at"]},
        ),
    ]
