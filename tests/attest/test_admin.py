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


def test_every_admin_page_names_attest_not_django(admin_client):
    for url in ("/admin/", "/admin/citations/project/"):
        page = admin_client.get(url).content.decode()
        assert "Django administration" not in page and "Django site admin" not in page
        assert '<a href="/admin/">Attest administration</a>' in page
        assert "| Attest admin</title>" in page
    assert (
        "<h1>Ledger, verification and payments</h1>" in admin_client.get("/admin/").content.decode()
    )


def test_admin_times_show_seconds_and_the_zone(admin_client):
    """In a list column and on a read-only page alike: to the second, in UTC, zone written."""
    from datetime import UTC, datetime

    from tests.citations.factories import ProjectFactory

    project = ProjectFactory(name="timed")
    moment = datetime(2026, 3, 4, 10, 11, 58, tzinfo=UTC)
    type(project).objects.filter(pk=project.pk).update(created_at=moment)
    listing = admin_client.get("/admin/citations/project/").content.decode()
    assert "2026-03-04 10:11:58 UTC" in listing
    page = admin_client.get(f"/admin/citations/project/{project.pk}/change/").content.decode()
    assert "2026-03-04 10:11:58 UTC" in page
    assert "10:11 a.m." not in listing + page
