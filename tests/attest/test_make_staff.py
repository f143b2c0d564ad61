"""manage.py make_staff: a staff user who is not a superuser, for make_auditor to use."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def _run(command: str, *args) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def test_a_new_staff_user_is_not_a_superuser_and_has_no_password_yet(django_user_model):
    said = _run("make_staff", "sam", "--email", "sam@example.org")
    assert "sam is now a staff user (not a superuser)" in said
    assert "manage.py changepassword sam" in said and "make_auditor sam" in said
    sam = django_user_model.objects.get(username="sam")
    assert (sam.is_staff, sam.is_superuser, sam.email) == (True, False, "sam@example.org")
    assert not sam.has_usable_password()


def test_the_new_staff_user_becomes_an_auditor_who_reads_the_admin(django_user_model, client):
    _run("make_staff", "sam")
    assert "sam is now an auditor" in _run("make_auditor", "sam")
    client.force_login(django_user_model.objects.get(username="sam"))
    assert client.get("/admin/citations/fact/").status_code == 200
    assert client.get("/admin/citations/project/add/").status_code == 403


def test_an_existing_user_is_made_staff_once(django_user_model):
    django_user_model.objects.create_user("pat", "pat@example.org", "pw")
    assert "pat is now a staff user (not a superuser)" in _run("make_staff", "pat")
    pat = django_user_model.objects.get(username="pat")
    assert pat.is_staff and pat.check_password("pw")
    assert "already a staff user; nothing changed" in _run("make_staff", "pat")


def test_a_superuser_is_refused_and_left_as_it_was(django_user_model):
    django_user_model.objects.create_superuser("root", "root@example.org", "pw")
    with pytest.raises(CommandError, match="never takes that away"):
        _run("make_staff", "root")
    assert django_user_model.objects.get(username="root").is_superuser


def test_make_auditor_tells_a_superuser_what_to_do_instead(django_user_model):
    django_user_model.objects.create_superuser("root", "root@example.org", "pw")
    with pytest.raises(CommandError, match=r"manage.py make_staff NAME\), then run make_auditor"):
        _run("make_auditor", "root")
