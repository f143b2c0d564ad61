"""The free-trial budget: a per-IP, per-day counter every server process shares."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from billing.models import TrialBudget, TrialUse


def trial_day() -> datetime.date:
    return timezone.now().astimezone(datetime.UTC).date()


def trial_reserve(*, client_ip: str, day: datetime.date) -> bool:
    """Take one free call from today's budget, or say there is none left.

    The call is taken before the work so parallel requests cannot overspend; a call whose
    outcome is not charged gives it back (``trial_refund``). The conditional UPDATE is
    atomic on both databases.
    """
    limit = settings.ATTEST_TRIAL_CALLS_PER_DAY
    if limit <= 0 or not client_ip:
        return False  # no budget, or no address to keep one for
    with transaction.atomic():
        TrialBudget.objects.get_or_create(client_ip=client_ip, day=day)
        taken = TrialBudget.objects.filter(client_ip=client_ip, day=day, used__lt=limit).update(
            used=F("used") + 1
        )
    return taken == 1


def trial_refund(*, client_ip: str, day: datetime.date) -> None:
    TrialBudget.objects.filter(client_ip=client_ip, day=day, used__gt=0).update(used=F("used") - 1)


def trial_record_use(*, client_ip: str, day: datetime.date, route: str, request_id: str) -> None:
    TrialUse.objects.create(client_ip=client_ip, day=day, route=route, request_id=request_id)
