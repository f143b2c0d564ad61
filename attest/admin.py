"""Admin building blocks shared by every app: read-only pages that stay fast on big tables."""

from __future__ import annotations

from django.contrib import admin
from django.core.paginator import Paginator
from django.utils.functional import cached_property


class CappedCountPaginator(Paginator):
    """Counts at most CAP rows, so paging a table of millions never counts all of them.

    Past the cap the admin offers the first CAP rows' pages; filters and search reach
    the rest.
    """

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        return min(self.object_list[: self.CAP + 1].count(), self.CAP)


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


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
