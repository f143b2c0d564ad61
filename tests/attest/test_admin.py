"""The shared admin pieces: capped counting and read-only pages."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import AdminSite
from django.contrib.auth.models import User
from django.test import RequestFactory

from attest.admin import CappedCountPaginator, ReadOnlyAdmin

pytestmark = pytest.mark.django_db


class ThreeRowCap(CappedCountPaginator):
    CAP = 3


def test_paginator_counts_every_row_under_the_cap():
    for i in range(5):
        User.objects.create(username=f"user{i}")
    assert CappedCountPaginator(User.objects.order_by("pk"), 2).count == 5


def test_paginator_stops_counting_at_the_cap():
    for i in range(5):
        User.objects.create(username=f"user{i}")
    paginator = ThreeRowCap(User.objects.order_by("pk"), 2)
    assert paginator.count == 3
    assert paginator.num_pages == 2
    assert [u.username for u in paginator.page(1)] == ["user0", "user1"]


def test_read_only_admin_refuses_every_write():
    model_admin = ReadOnlyAdmin(User, AdminSite())
    request = RequestFactory().get("/admin/")
    request.user = User.objects.create_superuser("root", "root@example.org", "pw")
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
