"""The payment ledger: offers, claims, settlements, refusals, trial use, local transfers."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Offer(models.Model):
    """One 402 answer: what was asked for and why."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    route = models.CharField(max_length=64)
    reason = models.CharField(max_length=96)
    network = models.CharField(max_length=64)
    asset = models.CharField(max_length=66)
    amount = models.CharField(max_length=40)
    pay_to = models.CharField(max_length=66)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["route", "reason"])]

    def __str__(self) -> str:
        return f"{self.route} offer ({self.reason})"


class PaymentClaim(models.Model):
    """A verified authorization reserved for one request, so it can pay only once."""

    class State(models.TextChoices):
        CLAIMED = "claimed", "claimed (work running)"
        SETTLING = "settling", "settling"
        SETTLED = "settled", "settled"
        PENDING = "pending", "settlement pending"
        RELEASED = "released", "released (not charged)"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    route = models.CharField(max_length=64)
    network = models.CharField(max_length=64)
    asset = models.CharField(max_length=66)
    payer = models.CharField(max_length=66, db_index=True)
    nonce = models.CharField(max_length=66)
    amount = models.CharField(max_length=40)
    valid_before = models.BigIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.CLAIMED)
    # Why the claim ended where it did: "charged", the uncharged error code, or the facilitator's.
    outcome = models.CharField(max_length=96, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # A released claim keeps its row for the ledger but frees the authorization.
            models.UniqueConstraint(
                fields=["network", "asset", "payer", "nonce"],
                condition=~Q(state="released"),
                name="billing_one_live_claim_per_authorization",
            ),
        ]
        indexes = [models.Index(fields=["route", "state"])]

    def __str__(self) -> str:
        return f"{self.route} claim by {self.payer} ({self.state})"


class Settlement(models.Model):
    """The facilitator's answer to one settle call."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    claim = models.ForeignKey(PaymentClaim, on_delete=models.PROTECT, related_name="settlements")
    facilitator = models.CharField(max_length=200)
    success = models.BooleanField()
    # Written as the facilitator reports them, after the money moved: no length limit
    # that a long answer could overflow into a 500, and nothing cut from the record.
    transaction = models.TextField(blank=True)
    network = models.TextField()
    payer = models.TextField(blank=True)
    amount = models.CharField(max_length=40)
    error_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"settlement {self.transaction or self.error_reason}"


class Refusal(models.Model):
    """A payment that was refused before any work: invalid, reused, expiring or mismatched."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    route = models.CharField(max_length=64)
    reason = models.CharField(max_length=200)
    payer = models.CharField(max_length=66, blank=True, db_index=True)
    network = models.CharField(max_length=64, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["route", "reason"])]

    def __str__(self) -> str:
        return f"{self.route} refusal ({self.reason})"


class TrialBudget(models.Model):
    """Free calls one caller IP has used on one UTC day; the counter every process shares."""

    client_ip = models.GenericIPAddressField()
    day = models.DateField()
    used = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day"]
        constraints = [
            models.UniqueConstraint(
                fields=["client_ip", "day"], name="billing_one_budget_per_ip_day"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.client_ip} on {self.day}: {self.used}"


class TrialUse(models.Model):
    """One charged free-trial call."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    route = models.CharField(max_length=64)
    client_ip = models.GenericIPAddressField()
    day = models.DateField()
    request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.route} trial call from {self.client_ip}"


class LocalTransfer(models.Model):
    """A transfer the built-in local facilitator settled in place of an on-chain one."""

    created_at = models.DateTimeField(auto_now_add=True)
    transaction = models.CharField(max_length=66, unique=True)
    chain_id = models.BigIntegerField()
    token = models.CharField(max_length=42)
    payer = models.CharField(max_length=42)
    pay_to = models.CharField(max_length=42)
    value = models.CharField(max_length=80)
    nonce = models.CharField(max_length=66)
    valid_after = models.BigIntegerField()
    valid_before = models.BigIntegerField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # The EIP-3009 rule a token contract enforces: an authorization is used once.
            models.UniqueConstraint(
                fields=["chain_id", "token", "payer", "nonce"], name="billing_local_nonce_once"
            ),
        ]

    def __str__(self) -> str:
        return self.transaction
