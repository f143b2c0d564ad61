"""The payment ledger: offers, claims, settlements, refusals, trial use, local transfers."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Offer(models.Model):
    """402 offers made in one minute to one caller for one route and reason, counted.

    Unpaid requests are free for anyone to send, so each writes no row of its own: the
    first offer of a minute creates the row and the rest add to ``count``.
    """

    minute = models.DateTimeField(db_index=True)
    route = models.CharField(max_length=64)
    reason = models.CharField(max_length=96)
    # The caller's trial bucket: an IPv4 address or an IPv6 /64 network; "" if unknown.
    caller = models.CharField(max_length=45, blank=True)
    count = models.PositiveIntegerField(default=1)
    network = models.CharField(max_length=64)
    asset = models.CharField(max_length=66)
    amount = models.CharField(max_length=40)
    pay_to = models.CharField(max_length=66)
    last_request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-minute"]
        constraints = [
            models.UniqueConstraint(
                fields=["minute", "route", "reason", "caller"],
                name="billing_one_offer_row_per_minute",
            ),
        ]
        indexes = [models.Index(fields=["route", "reason"])]

    def __str__(self) -> str:
        return f"{self.route} offer ({self.reason}) x{self.count}"


class PaymentClaim(models.Model):
    """A verified authorization reserved for one request, so it can pay only once.

    ``claimed`` and ``settling`` are held under a lease: a worker that dies mid-work or
    mid-settle cannot keep the authorization past ``lease_until``. A retry then frees an
    abandoned ``claimed`` claim (no money moved) or reconciles an abandoned ``settling``
    one with the facilitator (money may have moved).
    """

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
    # Until when the worker holding a claimed or settling claim is presumed alive.
    lease_until = models.DateTimeField(null=True, blank=True)
    # Why the claim ended where it did: "charged", the uncharged error code, or the facilitator's.
    outcome = models.CharField(max_length=96, blank=True)
    # SHA-256 of method, route and canonical body: a retry of the same request matches it.
    request_digest = models.CharField(max_length=64, blank=True)
    # SHA-256 of the signed authorization: the same payment sent again matches it.
    payment_digest = models.CharField(max_length=64, blank=True)
    # The verified payload and requirement, so a settlement can be retried without the caller.
    payment = models.JSONField(default=dict, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True)
    # The payer's idempotency key (x402 ``payment-identifier``): "" when none was sent.
    payment_id = models.CharField(max_length=128, blank=True)
    # A paid top-up of prepaid credit: the owner whose balance grows once this settles.
    credit_owner = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # A released claim keeps its row for the ledger but frees the authorization.
            models.UniqueConstraint(
                fields=["network", "asset", "payer", "nonce"],
                condition=~Q(state="released"),
                name="billing_one_live_claim_per_authorization",
            ),
            # One live claim per payer and identifier: a second payment under the same key
            # is answered from the first, never charged (billing.services.payment_ids).
            models.UniqueConstraint(
                fields=["payer", "payment_id"],
                condition=~Q(state="released") & ~Q(payment_id=""),
                name="billing_one_live_claim_per_payment_id",
            ),
            # Work and settlement in flight always have a lease that ends.
            models.CheckConstraint(
                condition=~Q(state__in=["claimed", "settling"]) | Q(lease_until__isnull=False),
                name="billing_claim_in_flight_has_lease",
            ),
        ]
        indexes = [
            models.Index(fields=["route", "state"]),
            models.Index(fields=["state", "lease_until"], name="billing_claim_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.route} claim by {self.payer} ({self.state})"


class PaidAnswer(models.Model):
    """The exact bytes of a charged answer, kept so a retry with the same payment gets them.

    Written before settlement starts, so an answer whose settlement went through can always
    be obtained again, even if the worker that produced it died mid-settle. Deleted when its
    claim is released (the answer was withheld) and once the retry window has passed.
    """

    claim = models.OneToOneField(
        PaymentClaim, on_delete=models.CASCADE, primary_key=True, related_name="answer"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    status_code = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=200)
    body = models.BinaryField()
    # Headers the view set on the answer (not the per-request ones such as X-Request-ID).
    headers = models.JSONField(default=dict)
    # The settlement result as sent in PAYMENT-RESPONSE, once settled.
    payment_response = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"answer to claim {self.claim_id} ({len(self.body)} bytes)"


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
    """Payments refused before any work in one minute, for one route, reason, payer and caller.

    Counted like offers: a flood of bad payment headers adds to ``count`` instead of rows.
    """

    minute = models.DateTimeField(db_index=True)
    route = models.CharField(max_length=64)
    reason = models.CharField(max_length=200)
    payer = models.CharField(max_length=66, blank=True, db_index=True)
    caller = models.CharField(max_length=45, blank=True)
    count = models.PositiveIntegerField(default=1)
    network = models.CharField(max_length=64, blank=True)
    last_request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-minute"]
        constraints = [
            models.UniqueConstraint(
                fields=["minute", "route", "reason", "payer", "caller"],
                name="billing_one_refusal_row_per_minute",
            ),
        ]
        indexes = [models.Index(fields=["route", "reason"])]

    def __str__(self) -> str:
        return f"{self.route} refusal ({self.reason}) x{self.count}"


class TrialBudget(models.Model):
    """Free calls one caller IP has used on one UTC day; the counter every process shares."""

    client_ip = models.GenericIPAddressField()
    day = models.DateField()
    used = models.PositiveIntegerField(default=0)  # spent, plus held by calls still running
    spent = models.PositiveIntegerField(default=0)  # given to charged outcomes, never back

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


class CreditAccount(models.Model):
    """A prepaid balance, in micro-USD (1 USD = 1,000,000: USDC's atomic unit), never below 0.

    ``owner`` is an opaque key another app gives (citations: ``project:<id>``); billing
    knows nothing of projects. Holds are taken from ``balance`` by a conditional update
    (billing.services.credit), so the check constraint is a second guard, not the first.
    """

    owner = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    balance = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["owner"]
        constraints = [
            models.CheckConstraint(
                condition=Q(balance__gte=0), name="billing_credit_never_below_zero"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.owner}: {self.balance} micro-USD"


class CreditHold(models.Model):
    """The price of one credit-paid call, taken from the balance while its work runs.

    ``held`` under a lease (a worker presumed dead after it); then ``drawn`` (charged) or
    ``released`` (given back: an uncharged outcome, or a dead worker's hold recovered).
    """

    class State(models.TextChoices):
        HELD = "held", "held (work running)"
        DRAWN = "drawn", "drawn (charged)"
        RELEASED = "released", "released (not charged)"

    account = models.ForeignKey(CreditAccount, on_delete=models.PROTECT, related_name="holds")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    route = models.CharField(max_length=64)
    amount = models.BigIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.HELD)
    lease_until = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=96, blank=True)
    request_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="billing_hold_positive"),
            models.CheckConstraint(
                condition=~Q(state="held") | Q(lease_until__isnull=False),
                name="billing_hold_has_lease",
            ),
        ]
        indexes = [models.Index(fields=["account", "state", "lease_until"])]

    def __str__(self) -> str:
        return f"{self.route} hold of {self.amount} ({self.state})"


class MoneyEvent(models.Model):
    """One movement of money, written in the transaction that makes it.

    x402: ``claim`` (an authorization reserved), ``settle`` (money moved to us),
    ``release`` (the claim freed, nothing charged). Credit: ``top_up`` (bought over x402),
    ``hold``, ``draw`` and ``release`` of a call's price. Offers stay the counted rows of
    ``Offer`` (an unpaid request is free to send, so it never writes a row of its own).
    Amounts are micro-USD, as a credit balance is.
    """

    class Kind(models.TextChoices):
        CLAIM = "claim"
        SETTLE = "settle"
        RELEASE = "release"
        TOP_UP = "top_up"
        HOLD = "hold"
        DRAW = "draw"

    class Rail(models.TextChoices):
        X402 = "x402"
        CREDIT = "credit"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    rail = models.CharField(max_length=8, choices=Rail.choices)
    amount = models.BigIntegerField()
    route = models.CharField(max_length=64, blank=True)
    request_id = models.CharField(max_length=128, blank=True)
    account = models.ForeignKey(
        CreditAccount, null=True, blank=True, on_delete=models.PROTECT, related_name="events"
    )
    claim = models.ForeignKey(
        PaymentClaim, null=True, blank=True, on_delete=models.PROTECT, related_name="events"
    )
    hold = models.ForeignKey(
        CreditHold, null=True, blank=True, on_delete=models.PROTECT, related_name="events"
    )

    class Meta:
        ordering = ["-at", "-pk"]
        constraints = [
            # A claim tops up at most once: the same payment sent twice is one top-up.
            models.UniqueConstraint(
                fields=["claim"], condition=Q(kind="top_up"), name="billing_one_top_up_per_claim"
            ),
        ]
        indexes = [models.Index(fields=["account", "id"])]

    def __str__(self) -> str:
        return f"{self.rail} {self.kind} of {self.amount}"
