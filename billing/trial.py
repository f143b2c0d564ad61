"""The free-trial budget: a per-IP, per-day counter every server process shares."""

from __future__ import annotations

import datetime
import ipaddress
from functools import cache

from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from attest.prepared import columns, created, prepared, run
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
    outcome is not charged gives it back (``trial_refund``). One statement, atomic on both
    databases: the day's first call inserts the budget, a later one adds to it only while
    it is under the limit, and either returns the count (no row: the budget is spent).
    """
    limit = settings.ATTEST_TRIAL_CALLS_PER_DAY
    client_ip = trial_bucket(client_ip)
    if limit <= 0 or not client_ip:
        return None  # no budget, or no address to keep one for
    with connection.cursor() as cursor:
        cursor.execute(_reserve_sql(), [client_ip, day, limit])
        row = cursor.fetchone()
    if row is None:
        return None
    return max(0, limit - row[0])


@cache
def _reserve_sql() -> str:
    table = connection.ops.quote_name(TrialBudget._meta.db_table)
    fields = TrialBudget._meta.concrete_fields
    columns = {field.name: field.column for field in fields if field.column}
    ip, day, used, spent = (
        connection.ops.quote_name(columns[name]) for name in ("client_ip", "day", "used", "spent")
    )
    return (
        f"INSERT INTO {table} ({ip}, {day}, {used}, {spent}) VALUES (%s, %s, 1, 0) "
        f"ON CONFLICT ({ip}, {day}) DO UPDATE SET {used} = {table}.{used} + 1 "
        f"WHERE {table}.{used} < %s RETURNING {used}"
    )


def trial_refund(*, client_ip: str, day: datetime.date) -> None:
    client_ip = trial_bucket(client_ip)
    TrialBudget.objects.filter(client_ip=client_ip, day=day, used__gt=0).update(used=F("used") - 1)


def trial_spent(*, client_ip: str, day: datetime.date) -> int:
    """Free calls today's charged outcomes took: the part of the budget that never comes back."""
    row = TrialBudget.objects.filter(client_ip=trial_bucket(client_ip), day=day).first()
    return 0 if row is None else row.spent


def trial_record_use(*, client_ip: str, day: datetime.date, route: str, request_id: str) -> None:
    # Both statements' texts are built once (attest.prepared): compiling the ORM's insert
    # and update was most of their CPU, at every charged trial call.
    created(TrialUse, client_ip=client_ip, day=day, route=route, request_id=request_id)
    run(_spend_sql(), [1, *prepared(TrialBudget, client_ip=trial_bucket(client_ip), day=day)])


@cache
def _spend_sql() -> str:
    """``TrialBudget.objects.filter(client_ip=..., day=...).update(spent=F("spent") + 1)``."""
    table = connection.ops.quote_name(TrialBudget._meta.db_table)
    ip, day, spent = columns(TrialBudget, "client_ip", "day", "spent")
    return f"UPDATE {table} SET {spent} = ({table}.{spent} + %s) WHERE ({ip} = %s AND {day} = %s)"
