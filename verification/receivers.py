"""Billing's word on a paid answer corrects the verification record the view wrote."""

from __future__ import annotations

from django.dispatch import receiver

from billing.signals import paid_answer_delivered, paid_answer_withheld
from verification.models import Verification


@receiver(paid_answer_withheld, dispatch_uid="verification.answer_withheld")
def record_withheld(*, request_id: str, status_code: int, code: str, **kwargs) -> None:
    """The view answered, but settlement failed or is unconfirmed: the answer never left."""
    Verification.objects.filter(
        request_id=request_id, outcome=Verification.Outcome.ANSWERED
    ).update(outcome=Verification.Outcome.REFUSED, status_code=status_code, error_code=code[:64])


@receiver(paid_answer_delivered, dispatch_uid="verification.answer_delivered")
def record_delivered(*, request_id: str, **kwargs) -> None:
    """A retry reconciled the settlement and was given the stored answer after all."""
    Verification.objects.filter(request_id=request_id, outcome=Verification.Outcome.REFUSED).update(
        outcome=Verification.Outcome.ANSWERED, status_code=200, error_code=""
    )
