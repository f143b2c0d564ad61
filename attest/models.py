"""The foundation's one table: the shared limiter's counts when the cache is per process."""

from __future__ import annotations

from django.db import models


class RateCount(models.Model):
    """One limiter bucket's count in its current fixed window (see attest.ratelimit).

    Only used without a shared cache (no ``CACHE_URL=redis://``): the embedded default
    cache lives in each process's memory, so every gunicorn worker would count alone.
    """

    bucket = models.CharField(max_length=255, primary_key=True)
    window_end = models.BigIntegerField(db_index=True)  # Unix seconds, exclusive
    count = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.bucket}: {self.count}"


class SharedState(models.Model):
    """A small JSON state every process shares when there is no Redis (attest.shared_state).

    Its table keeps the name it had when the capacity limits alone used it.
    """

    key = models.CharField(max_length=200, primary_key=True)
    value = models.JSONField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "verification_sharedstate"

    def __str__(self) -> str:
        return self.key
