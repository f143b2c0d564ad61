"""Billing's services: admitting, settling, releasing and replaying priced calls.

Split by concern: ``admission`` (trial, payment checks, claims, retries), ``settlement``
(settle, release, reconcile), ``claims`` (a claim's leased life), ``answers`` (stored paid
answers), ``offers`` (the 402 and its counted ledger rows), ``calls`` (the call itself).
"""

from billing.services.admission import admit_call
from billing.services.answers import RenderedAnswer, answer_response, request_digest
from billing.services.calls import TIER_PAID, TIER_TRIAL, PricedCall, VerifiedPayment
from billing.services.settlement import record_trial_use, release_call, settle_paid_call

__all__ = [
    "TIER_PAID",
    "TIER_TRIAL",
    "PricedCall",
    "RenderedAnswer",
    "VerifiedPayment",
    "admit_call",
    "answer_response",
    "record_trial_use",
    "release_call",
    "request_digest",
    "settle_paid_call",
]
