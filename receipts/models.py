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
