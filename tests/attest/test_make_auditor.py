"""manage.py make_auditor: a staff user into the auditors group and out again."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from attest.apps import AUDITORS_GROUP

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = StringIO()
    call_command("make_auditor", *args, stdout=out)
    return out.getvalue()


def _auditors() -> list[str]:
    return list(Group.objects.get(name=AUDITORS_GROUP).user_set.values_list("username", flat=True))


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("sam", "sam@example.org", "pw", is_staff=True)


def test_a_staff_user_becomes_an_auditor_and_can_read_the_admin(staff, client):
    assert "sam is now an auditor" in _run("sam")
    assert _auditors() == ["sam"]
    client.force_login(staff)
    assert client.get("/admin/citations/fact/").status_code == 200
    assert "already an auditor" in _run("sam")
    assert _auditors() == ["sam"]


def test_remove_takes_the_user_out_and_the_admin_is_closed_again(staff, client):
    _run("sam")
    assert "no longer an auditor" in _run("sam", "--remove")
    assert _auditors() == []
    client.force_login(staff)
    assert client.get("/admin/citations/fact/").status_code == 403
    assert "not an auditor; nothing changed" in _run("sam", "--remove")


def test_an_unknown_user_is_a_clear_error():
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        _run("nobody")


def test_a_user_who_is_not_staff_is_refused(django_user_model):
    django_user_model.objects.create_user("pat", "pat@example.org", "pw")
    with pytest.raises(CommandError, match="not a staff user"):
        _run("pat")
    assert _auditors() == []


def test_a_superuser_is_refused_since_the_group_would_not_limit_them(django_user_model):
    django_user_model.objects.create_superuser("root", "root@example.org", "pw")
    with pytest.raises(CommandError, match="superuser"):
        _run("root")
    assert _auditors() == []
