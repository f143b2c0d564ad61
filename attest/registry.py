"""What the apps show on the wiring's pages, each app registering its own part.

As ``admin.site.register`` does for the admin, each app declares what its routes can
answer and what it enforces, and the wiring (docs pages, dashboard) renders what was
registered without importing the app's internals:

- ``register_errors(route, errors)``: a route's error list ("POST /v1/fetch" → ErrorDocs),
  in the app's ``route_errors`` module, which both its views and its ``docs`` module import:
  the view's schema is built from it (``attest.schema.route_error_responses``), the docs
  page lists it, and the docs check holds the two to each other.
- ``register_limits(group, rows)``: a callable returning a group's Limit rows, read when a
  page renders (so each figure comes from the running settings), in ``<app>/docs.py``.
- ``register_table(name, rows)``: any other table a page shows (claims, statuses).
- ``register_daily(counts)``: a dashboard panel's per-day counts, in ``<app>/admin.py``.
- ``register_charge_rule(rule)``: billing's answer to "is this error charged?".

Reading (``errors``, ``limits``, ``table``) first imports every app's ``docs`` module
(Django's ``autodiscover_modules``, as the admin finds ``admin`` modules), so an app's
figures are imported when a page needs them, not at start-up. Reading a key no app
registered raises instead of showing an empty table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attest.errors import AttestError

# The limits page's groups, in the order it shows them; an app registers rows into one.
LIMIT_GROUPS = (
    "Requests",
    "Fetching a page",
    "PDF",
    "Matching",
    "Crossref lookups (pages with a DOI)",
    "Payments and receipts",
    "Batches",
    "Fact ledger",
)


@dataclass(frozen=True)
class ErrorDoc:
    """One error a route can answer, as a docs page lists it."""

    status: int
    code: str
    when: str

    @property
    def charged(self) -> bool:
        if _charge_rule is None:
            raise LookupError("no charge rule is registered (billing registers it)")
        return _charge_rule(self.status, self.code)


def raised(error: type[AttestError], when: str) -> ErrorDoc:
    """The ErrorDoc of an AttestError subclass: its status and code, and when it is raised."""
    return ErrorDoc(error.status_code, error.code, when)


@dataclass(frozen=True)
class Limit:
    what: str
    value: str
    over: str  # what happens past it
    setting: str = ""  # the environment variable that changes it, if any


# A dashboard panel's counts since a start: (UTC day, column, amount) rows. An int column
# adds up; the "settled" column takes {"network|asset": atomic units} and adds per key.
DailyCounts = Callable[[datetime], Iterable[tuple[date, str, Any]]]

_errors: dict[str, tuple[ErrorDoc, ...]] = {}
_limits: dict[str, list[Callable[[], list[Limit]]]] = {}
_tables: dict[str, Callable[[], list[Any]]] = {}
_daily: list[DailyCounts] = []
_charge_rule: Callable[[int, str], bool] | None = None


def register_errors(route: str, errors: Iterable[ErrorDoc]) -> None:
    if route in _errors:
        raise ValueError(f"the errors of {route} are registered already")
    _errors[route] = tuple(errors)


def register_limits(group: str, rows: Callable[[], list[Limit]]) -> None:
    if group not in LIMIT_GROUPS:
        raise ValueError(f"{group!r} is not a limits group: one of {LIMIT_GROUPS}")
    if rows not in _limits.setdefault(group, []):
        _limits[group].append(rows)


def register_table(name: str, rows: Callable[[], list[Any]]) -> None:
    if name in _tables and _tables[name] is not rows:
        raise ValueError(f"the table {name} is registered already")
    _tables[name] = rows


def register_daily(counts: DailyCounts) -> None:
    if counts not in _daily:
        _daily.append(counts)


def register_charge_rule(rule: Callable[[int, str], bool]) -> None:
    global _charge_rule
    _charge_rule = rule


_serving_hooks: list[Callable[[], None]] = []


def register_serving_hook(hook: Callable[[], None]) -> None:
    """Something a serving process does once before its first request (apps' ready())."""
    if hook not in _serving_hooks:
        _serving_hooks.append(hook)


def prepare_to_serve() -> None:
    """Run every registered serving hook; the WSGI entry point calls it, commands do not."""
    for hook in _serving_hooks:
        hook()


_discovered = False


def discover() -> None:
    """Import every installed app's ``docs`` module (once), which registers its part."""
    global _discovered
    if not _discovered:
        from django.utils.module_loading import autodiscover_modules

        autodiscover_modules("docs")
        _discovered = True


def errors(route: str) -> tuple[ErrorDoc, ...]:
    discover()
    return registered_errors(route)


def registered_errors(route: str) -> tuple[ErrorDoc, ...]:
    """A route's errors without discovering: for a view's schema, read when its module is
    imported, after the module that registers them (``<app>/.../route_errors.py``)."""
    try:
        return _errors[route]
    except KeyError:
        raise LookupError(f"no app registered the errors of {route}") from None


def limits() -> list[tuple[str, list[Limit]]]:
    """Every registered limit, grouped in LIMIT_GROUPS' order, each figure read now."""
    discover()
    return [
        (group, [row for rows in _limits[group] for row in rows()])
        for group in LIMIT_GROUPS
        if group in _limits
    ]


def table(name: str) -> list[Any]:
    discover()
    try:
        return _tables[name]()
    except KeyError:
        raise LookupError(f"no app registered the table {name}") from None


def daily() -> tuple[DailyCounts, ...]:
    """The dashboard's counts (the apps' admin modules register them when the admin loads)."""
    if not _daily:
        raise LookupError("no app registered dashboard counts (are the admin modules loaded?)")
    return tuple(_daily)


# --- what the foundation itself answers, and how a figure reads ---------------------------

# Answered by the one error handler for any JSON route (attest.errors).
BODY_ERRORS = (
    ErrorDoc(400, "invalid_json", "The body is not valid JSON."),
    ErrorDoc(
        400,
        "invalid_request",
        "A field the route does not know (details.field names it), or text that is not "
        "valid Unicode: a lone surrogate such as a \\udfff escape, or bytes that are not "
        "UTF-8 (details.field names where; the text is never echoed).",
    ),
    ErrorDoc(413, "request_too_large", "The body is larger than the request size limit."),
    ErrorDoc(415, "unsupported_media_type", "The body is not sent as application/json."),
)
INTERNAL = ErrorDoc(
    500, "internal_error", "The server failed; quote the X-Request-ID when reporting."
)
# Answered on every route when the database or the shared cache does not answer.
UNAVAILABLE = ErrorDoc(
    503, "unavailable", "The database or the shared cache did not answer; retry after Retry-After."
)


def bytes_text(count: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= size and count % (size // 4) == 0:
            return f"{count / size:g} {unit} ({count:,} bytes)"
    return f"{count:,} bytes"


def seconds_text(value: float) -> str:
    return f"{value:g} s"


def refused_text(error: type[AttestError]) -> str:
    return f"{error.status_code} {error.code}, not charged"


_RATE_UNITS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def rate_text(rate: str) -> str:
    """A rate such as "1200/m" (or "10/5m") as words."""
    count, _, period = rate.partition("/")
    amount, unit = period[:-1], _RATE_UNITS[period[-1]]
    per = f"{amount} {unit}s" if amount and amount != "1" else unit
    return f"{int(count):,} per {per}"
