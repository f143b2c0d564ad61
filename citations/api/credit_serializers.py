"""Bodies of /v1/credits: buying prepaid credit and reading the balance."""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from attest.fields import NoUnknownFields, StrictCharField
from billing.services.credit import MOVEMENT_KINDS

TOP_UP_MIN = Decimal("0.10")
TOP_UP_MAX = Decimal("100.00")
# 0.10 to 100.00 with at most 2 decimals, the range itself in the pattern, so the schema
# states the whole rule: 100 (with .0 or .00), 1 to 99.99, or 0.1 to 0.99.
AMOUNT_PATTERN = r"100(\.0{1,2})?|[1-9][0-9]?(\.[0-9]{1,2})?|0\.[1-9][0-9]?"
STATEMENT_MAX_LIMIT = 100


class CreditsIn(NoUnknownFields):
    amount = StrictCharField(
        help_text="US dollars to buy, as a string with at most 2 decimals, 0.10 to 100.00.",
        trim_whitespace=False,
        pattern=AMOUNT_PATTERN,
        pattern_message="amount is US dollars as a string with at most 2 decimals (e.g. '5.00').",
    )

    def validate_amount(self, value: str) -> str:
        if not TOP_UP_MIN <= Decimal(value) <= TOP_UP_MAX:
            raise serializers.ValidationError(
                f"amount is US dollars as a string with at most 2 decimals, from {TOP_UP_MIN} "
                f"to {TOP_UP_MAX} (e.g. '5.00')."
            )
        return f"{Decimal(value):.2f}"


class CreditsOpened(serializers.Serializer):
    credential = serializers.CharField(
        help_text="The new project's credential: shown once, send it as Authorization: Bearer."
    )
    project = serializers.CharField(help_text="The new project's name.")
    balance = serializers.CharField(help_text="US dollars, e.g. 5.00.")
    currency = serializers.CharField(help_text='"USD".')
    tier = serializers.CharField(help_text='"paid".')
    rail = serializers.CharField(help_text='"x402": credit is bought over x402 only.')
    network = serializers.CharField(help_text="CAIP-2 network of the payment.")


class CreditsToppedUp(serializers.Serializer):
    project = serializers.CharField(help_text="The credential's project.")
    balance = serializers.CharField(help_text="US dollars once this top-up settles.")
    currency = serializers.CharField(help_text='"USD".')
    tier = serializers.CharField(help_text='"paid".')
    rail = serializers.CharField(help_text='"x402": credit is bought over x402 only.')
    network = serializers.CharField(help_text="CAIP-2 network of the payment.")


class CreditStatementIn(serializers.Serializer):
    after = serializers.IntegerField(
        required=False, min_value=1, help_text="The `next` of the previous page."
    )
    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=STATEMENT_MAX_LIMIT
    )


class CreditMovementOut(serializers.Serializer):
    # Text, not an enum: a generic "type" enum's component name would collide with others.
    type = serializers.CharField(help_text=" | ".join(str(kind) for kind in MOVEMENT_KINDS))
    amount = serializers.CharField(help_text="US dollars.")
    at = serializers.DateTimeField()
    route = serializers.CharField(required=False, help_text="The priced route it paid for.")
    request_id = serializers.CharField(required=False)


class CreditStatementOut(serializers.Serializer):
    balance = serializers.CharField(help_text="US dollars, e.g. 4.99.")
    currency = serializers.CharField(help_text='"USD".')
    movements = CreditMovementOut(many=True, help_text="Newest first.")
    next = serializers.CharField(required=False, help_text="Pass as `after` for older ones.")
