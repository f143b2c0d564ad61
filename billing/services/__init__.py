"""Billing's services: admitting, settling, releasing and replaying priced calls.

Split by concern: ``admission`` (trial, payment checks, claims, retries), ``settlement``
(settle, release, reconcile), ``claims`` (a claim's leased life), ``answers`` (stored paid
answers), ``offers`` (the 402 and its counted ledger rows), ``calls`` (the call itself), ``credit``
(prepaid balances: hold, draw, release, top-up), ``events`` (money events as rows).
"""

from billing.services.admission import Rail, call_admit, call_rail
from billing.services.answers import RenderedAnswer, answer_response, request_digest
from billing.services.calls import TIER_PAID, TIER_TRIAL, PricedCall, VerifiedPayment
from billing.services.settlement import (
    call_draw_credit,
    call_record_trial_use,
    call_release,
    call_settle_paid,
)

__all__ = [
    "TIER_PAID",
    "TIER_TRIAL",
    "PricedCall",
    "Rail",
    "RenderedAnswer",
    "VerifiedPayment",
    "answer_response",
    "call_admit",
    "call_draw_credit",
    "call_rail",
    "call_record_trial_use",
    "call_release",
    "call_settle_paid",
    "request_digest",
]
