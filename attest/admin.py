"""Admin building blocks shared by every app: read-only pages that stay fast on big tables."""

from __future__ import annotations

import re
from typing import Any, cast

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

# The index links the dashboard (wiring.dashboard) above the apps' lists.
admin.site.index_template = "admin/attest_index.html"
# Attest's name, not Django's, in every page's header and title.
admin.site.site_header = "Attest administration"
admin.site.site_title = "Attest admin"
admin.site.index_title = "Ledger, verification and payments"
# The sidebar repeats the home page's list of models and took a quarter of a 1280 px
# screen from every changelist; the breadcrumbs and the home page lead to each list.
admin.site.enable_nav_sidebar = False


class CappedCountPaginator(Paginator):
    """Counts at most CAP rows, so paging a table of millions never counts all of them.

    Past the cap the admin offers the first CAP rows' pages; filters and search reach
    the rest.
    """

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        rows = cast("QuerySet[Any]", self.object_list)  # the admin pages querysets only
        return min(rows[: self.CAP + 1].count(), self.CAP)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Staff and auditors read; only services write (ledgers, audit log, payments)."""

    paginator = CappedCountPaginator
    show_full_result_count = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class InputFilter(admin.SimpleListFilter):
    """A list filter typed into a box (an exact ID), for columns with too many values to list."""

    template = "admin/input_filter.html"

    def lookups(self, request, model_admin):
        # Django shows a filter only when it has choices; the box is the one choice.
        return [("", "")]

    def choices(self, changelist):
        # The other filters' parameters, kept as hidden fields of the box's form.
        query = changelist.get_filters_params()
        query.pop(self.parameter_name, None)
        yield {
            "value": self.value() or "",
            "parameter": self.parameter_name,
            "others": [(k, v) for k, values in query.items() for v in _values(values)],
        }


def _values(value) -> list[str]:
    return list(value) if isinstance(value, list | tuple) else [value]


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


def milliseconds(value: float | None) -> str:
    """A duration kept in (fractional) milliseconds, as a whole number of them."""
    return "—" if value is None else f"{round(value):,} ms"


def short_hex(value: str, keep: int = 6) -> str:
    """An address, hash or transaction ID cut to fit a list column ("0x5B38Da…beddC4"), the
    whole value in its tooltip and on the row's page; search takes the whole value."""
    if not value or len(value) <= 2 * keep + 3:
        return value or "—"
    return format_html('<span title="{}">{}…{}</span>', value, value[: keep + 2], value[-keep:])


_BREAK_AFTER = re.compile(r"(?<=[_/:.])")


def wrappable(value: str) -> str:
    """A code, route or address that may wrap after each ``_ / : .`` in a narrow column
    ("content_type_<wbr>not_<wbr>supported"); the text copied is unchanged."""
    if not value:
        return "—"
    return format_html_join(
        mark_safe("<wbr>"), "{}", ((part,) for part in _BREAK_AFTER.split(value))
    )
