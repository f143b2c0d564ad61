"""A table-less model so the admin can list the signing keys like any other record."""

from django.db import models


class SigningKey(models.Model):
    """The keys live in ATTEST_SIGNING_KEYS (files every process reads), not in rows.

    This model has no table (``managed = False``): it exists so the admin shows a
    "Signing keys" page guarded by the usual ``view`` permission, which auditors get
    like every other read-only page.
    """

    kid = models.CharField(max_length=64, primary_key=True)

    class Meta:
        managed = False
        default_permissions = ("view",)
        verbose_name = "signing key"

    def __str__(self) -> str:
        return self.kid


class AppendOnlyQuerySet(models.QuerySet):
    """The log's rows are written once: no bulk update or delete through the ORM either."""

    def update(self, **kwargs):
        raise ValueError("the transparency log is append-only")

    def delete(self):
        raise ValueError("the transparency log is append-only")


class AppendOnly(models.Model):
    """Refuses saving a stored row again and deleting one (SQL triggers refuse it below)."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("the transparency log is append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("the transparency log is append-only")


class LogLeaf(AppendOnly):
    """One leaf of the transparency log: a receipt, or a project's audit chain head.

    A leaf is hashed as RFC 9162 says (SHA-256 of 0x00 and its ASCII bytes; the hash is
    the level-0 LogNode). For an audit head, ``data`` keeps the leaf itself: canonical
    JSON of a project's ID and its last event's seq and hash, nothing of any event's
    content. For a receipt, ``data`` is empty: a receipt may sign a quote from a subject's
    messages, which erasure removes from every table, and this table is never rewritten.
    """

    RECEIPT = "receipt"
    AUDIT_HEAD = "audit_head"
    KINDS = [(RECEIPT, "receipt"), (AUDIT_HEAD, "audit chain head")]

    index = models.BigIntegerField(primary_key=True)
    kind = models.CharField(max_length=16, choices=KINDS)
    data = models.TextField()
    # A plain ID, not a foreign key: the ledger sits above receipts and calls into it.
    audit_project = models.BigIntegerField(null=True, blank=True)
    audit_seq = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "log leaf"
        verbose_name_plural = "log leaves"
        indexes = [
            models.Index(
                fields=["audit_project", "-audit_seq"],
                condition=models.Q(audit_project__isnull=False),
                name="logleaf_audit_head",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.index}"


class LogNode(AppendOnly):
    """The hash of one complete subtree: leaves [index * 2**level, (index + 1) * 2**level)."""

    pk = models.CompositePrimaryKey("level", "index")
    level = models.PositiveSmallIntegerField()
    index = models.BigIntegerField()
    hash = models.BinaryField(max_length=32)

    class Meta:
        verbose_name = "log node"

    def __str__(self) -> str:
        return f"node {self.level}/{self.index}"
