"""Auditors: a group that sees every admin page and can change nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from attest.apps import AUDITORS_GROUP
from citations.models import Project
from tests.citations.conftest import make_ledger

pytestmark = pytest.mark.django_db


@pytest.fixture
def auditor(client, django_user_model):
    user = django_user_model.objects.create_user("audrey", "audrey@example.org", "pw")
    user.is_staff = True
    user.save()
    user.groups.add(Group.objects.get(name=AUDITORS_GROUP))
    client.force_login(user)
    return client


def test_auditors_group_holds_every_view_permission_and_nothing_else():
    granted = set(
        Group.objects.get(name=AUDITORS_GROUP).permissions.values_list("codename", flat=True)
    )
    every_view = set(
        Permission.objects.filter(codename__startswith="view_").values_list("codename", flat=True)
    )
    assert granted == every_view
    assert {"view_fact", "view_auditevent", "view_paymentclaim", "view_verification"} <= granted


@pytest.mark.parametrize(
    "page",
    [
        "admin:citations_fact_changelist",
        "admin:citations_auditevent_changelist",
        "admin:billing_paymentclaim_changelist",
        "admin:verification_verification_changelist",
    ],
)
def test_auditor_reads_admin_pages(auditor, page):
    assert auditor.get(reverse(page)).status_code == 200


def test_auditor_cannot_run_write_actions(auditor):
    ledger = make_ledger()
    changelist = reverse("admin:citations_project_changelist")
    page = auditor.get(changelist).content.decode()
    assert 'value="suspend"' not in page
    auditor.post(changelist, {"action": "suspend", "_selected_action": [ledger.project.pk]})
    assert Project.objects.get(pk=ledger.project.pk).suspended_at is None
