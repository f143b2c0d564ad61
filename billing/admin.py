"""Read-only admin pages for the payment ledger."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import BigIntegerField, Sum
from django.db.models.functions import Cast, TruncDate

from attest.admin import ReadOnlyAdmin, short_hex, wrappable
from attest.registry import register_daily
from billing.models import (
    CreditAccount,
    CreditHold,
    LocalTransfer,
    MoneyEvent,
    Offer,
    PaidAnswer,
    PaymentClaim,
    Refusal,
    Settlement,
    TrialBudget,
    TrialUse,
)
from billing.money import token_amount, usd_text


class LedgerAdmin(ReadOnlyAdmin):
    """The ledger is written only by the payment flow; staff read it."""

    @admin.display(description="payer", ordering="payer")
    def short_payer(self, obj) -> str:
        return short_hex(obj.payer)

    @admin.display(description="reason", ordering="reason")
    def wrapped_reason(self, obj) -> str:
        return wrappable(obj.reason)

    @admin.display(description="caller", ordering="caller")
    def wrapped_caller(self, obj) -> str:
        return wrappable(obj.caller)

    @admin.display(description="amount", ordering="amount")
    def money(self, obj) -> str:
        return token_amount(obj.amount, network=obj.network, asset=obj.asset)


@admin.register(Offer)
class OfferAdmin(LedgerAdmin):
    list_display = [
        "minute",
        "route",
        "wrapped_reason",
        "count",
        "money",
        "network",
        "wrapped_caller",
    ]
    readonly_fields = ["money"]
    exclude = ["amount"]
    list_filter = ["route", "reason", "network"]
    search_fields = ["caller", "last_request_id"]
    date_hierarchy = "minute"


@admin.register(PaymentClaim)
class PaymentClaimAdmin(LedgerAdmin):
    list_display = [
        "created_at",
        "route",
        "short_payer",
        "money",
        "state",
        "lease_until",
        "outcome",
    ]
    readonly_fields = ["money"]
    list_filter = ["route", "state", "outcome", "network"]
    search_fields = ["payer", "nonce", "request_id"]
    date_hierarchy = "created_at"
    # The signed authorization: needed to settle, not to read. The amount shows in USDC.
    exclude = ["payment", "amount"]


@admin.register(PaidAnswer)
class PaidAnswerAdmin(LedgerAdmin):
    list_display = ["created_at", "claim_id", "claim_route", "status_code", "content_type", "size"]
    list_select_related = ["claim"]
    raw_id_fields = ["claim"]
    exclude = ["body"]
    date_hierarchy = "created_at"

    @admin.display(description="route", ordering="claim__route")
    def claim_route(self, obj: PaidAnswer) -> str:
        return obj.claim.route

    @admin.display(description="bytes")
    def size(self, obj: PaidAnswer) -> int:
        return len(obj.body)


@admin.register(Settlement)
class SettlementAdmin(LedgerAdmin):
    list_display = ["created_at", "claim_route", "short_payer", "money", "success", "short_tx"]
    readonly_fields = ["money"]
    exclude = ["amount"]
    list_filter = ["claim__route", "success", "error_reason", "facilitator"]
    search_fields = ["payer", "transaction"]
    list_select_related = ["claim"]
    raw_id_fields = ["claim"]
    date_hierarchy = "created_at"

    @admin.display(description="route", ordering="claim__route")
    def claim_route(self, obj: Settlement) -> str:
        return obj.claim.route

    @admin.display(description="amount", ordering="amount")
    def money(self, obj: Settlement) -> str:
        return token_amount(obj.amount, network=obj.network, asset=obj.claim.asset)

    @admin.display(description="transaction", ordering="transaction")
    def short_tx(self, obj: Settlement) -> str:
        return short_hex(obj.transaction)


@admin.register(Refusal)
class RefusalAdmin(LedgerAdmin):
    list_display = [
        "minute",
        "route",
        "wrapped_reason",
        "count",
        "short_payer",
        "wrapped_caller",
    ]
    list_filter = ["route", "reason"]
    search_fields = ["payer", "caller", "last_request_id"]
    date_hierarchy = "minute"


@admin.register(TrialUse)
class TrialUseAdmin(LedgerAdmin):
    list_display = ["created_at", "route", "client_ip", "day"]
    list_filter = ["route", "day"]
    search_fields = ["client_ip", "request_id"]
    date_hierarchy = "created_at"


@admin.register(TrialBudget)
class TrialBudgetAdmin(LedgerAdmin):
    list_display = ["day", "client_ip", "used"]
    list_filter = ["day"]
    search_fields = ["client_ip"]


@admin.register(LocalTransfer)
class LocalTransferAdmin(LedgerAdmin):
    list_display = ["created_at", "short_tx", "short_payer", "short_pay_to", "money"]
    readonly_fields = ["money"]
    exclude = ["value"]
    search_fields = ["transaction", "payer", "nonce"]

    @admin.display(description="amount", ordering="value")
    def money(self, obj: LocalTransfer) -> str:
        return token_amount(obj.value, network=f"eip155:{obj.chain_id}", asset=obj.token)

    @admin.display(description="transaction", ordering="transaction")
    def short_tx(self, obj: LocalTransfer) -> str:
        return short_hex(obj.transaction)

    @admin.display(description="pay to", ordering="pay_to")
    def short_pay_to(self, obj: LocalTransfer) -> str:
        return short_hex(obj.pay_to)


class CreditAdmin(ReadOnlyAdmin):
    """Balances and their movements: written only by the payment flow, read by staff."""

    @admin.display(description="amount (USD)", ordering="amount")
    def usd(self, obj) -> str:
        return usd_text(obj.amount)


@admin.register(CreditAccount)
class CreditAccountAdmin(CreditAdmin):
    list_display = ["owner", "balance_usd", "created_at"]
    search_fields = ["owner"]

    @admin.display(description="balance (USD)", ordering="balance")
    def balance_usd(self, obj: CreditAccount) -> str:
        return usd_text(obj.balance)


@admin.register(CreditHold)
class CreditHoldAdmin(CreditAdmin):
    list_display = ["created_at", "account", "route", "usd", "state", "lease_until", "outcome"]
    list_filter = ["route", "state", "outcome"]
    search_fields = ["account__owner", "request_id"]
    list_select_related = ["account"]
    raw_id_fields = ["account"]
    date_hierarchy = "created_at"


@admin.register(MoneyEvent)
class MoneyEventAdmin(CreditAdmin):
    list_display = ["at", "rail", "kind", "usd", "route", "account", "claim_id", "hold_id"]
    list_filter = ["rail", "kind", "route"]
    search_fields = ["account__owner", "request_id", "claim__payer"]
    list_select_related = ["account"]
    raw_id_fields = ["account", "claim", "hold"]
    date_hierarchy = "at"


def daily_counts(start):
    """The dashboard's refused payments and settled amounts per UTC day since start."""
    refusals = (
        Refusal.objects.filter(minute__gte=start)
        .annotate(day=TruncDate("minute"))
        .values("day")
        .annotate(total=Sum("count"))
    )
    for row in refusals:
        yield row["day"], "payment_refusals", row["total"]
    settled = (
        Settlement.objects.filter(created_at__gte=start, success=True)
        .annotate(day=TruncDate("created_at"))
        .values("day", "network", "claim__asset")
        .annotate(total=Sum(Cast("amount", BigIntegerField())))
    )
    for row in settled:
        yield row["day"], "settled", {f"{row['network']}|{row['claim__asset']}": row["total"]}


register_daily(daily_counts)
