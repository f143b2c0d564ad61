"""The free-trial budget: a per-IP, per-day counter every server process shares."""

from __future__ import annotations

import datetime
import ipaddress

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from billing.models import TrialBudget, TrialUse


def trial_day() -> datetime.date:
    return timezone.now().astimezone(datetime.UTC).date()


# One IPv6 subscriber is routed a whole /64 at least; budgeting per address would let them
# draw a fresh budget from each of its 2**64 addresses.
IPV6_BUDGET_PREFIX = 64


def trial_bucket(client_ip: str) -> str:
    """The address a trial budget is kept for: IPv4 as is, IPv6 by its /64 network."""
    if not client_ip:
        return ""
    address = ipaddress.ip_address(client_ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        network = ipaddress.IPv6Network((address, IPV6_BUDGET_PREFIX), strict=False)
        return str(network.network_address)
    return str(address)


def trial_reserve(*, client_ip: str, day: datetime.date) -> int | None:
    """Take one free call from today's budget: the calls left after it, or None if none was.

    The call is taken before the work so parallel requests cannot overspend; a call whose
    outcome is not charged gives it back (``trial_refund``). The conditional UPDATE is
    atomic on both databases.
    """
    limit = settings.ATTEST_TRIAL_CALLS_PER_DAY
    client_ip = trial_bucket(client_ip)
    if limit <= 0 or not client_ip:
        return None  # no budget, or no address to keep one for
    with transaction.atomic():
        TrialBudget.objects.get_or_create(client_ip=client_ip, day=day)
        budget = TrialBudget.objects.filter(client_ip=client_ip, day=day, used__lt=limit)
        if not budget.update(used=F("used") + 1):
            return None
        used = TrialBudget.objects.get(client_ip=client_ip, day=day).used
    return max(0, limit - used)


def trial_refund(*, client_ip: str, day: datetime.date) -> None:
    client_ip = trial_bucket(client_ip)
    TrialBudget.objects.filter(client_ip=client_ip, day=day, used__gt=0).update(used=F("used") - 1)


def trial_record_use(*, client_ip: str, day: datetime.date, route: str, request_id: str) -> None:
    TrialUse.objects.create(client_ip=client_ip, day=day, route=route, request_id=request_id)
