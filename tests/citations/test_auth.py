"""Credentials: Bearer auth on every ledger route, revocation, suspension, and the commands."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from attest.ratelimit import counts_in_cache, window_end
from citations.models import Credential, Project
from citations.services import credential_revoke

pytestmark = pytest.mark.django_db

ROUTES = ["/v1/observations", "/v1/recall", "/v1/citations/resolve"]


@pytest.mark.parametrize("route", ROUTES)
def test_every_ledger_route_needs_a_credential(api, route):
    response = api.post(route, {}, format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer att_nope_nope",
        "Bearer garbage",
        "Basic dXNlcjpwYXNz",
        "Bearer ",
        # A NUL in the prefix made PostgreSQL refuse the lookup query: a 500.
        "Bearer att_0123\x0089ab_" + "x" * 43,
        "Bearer att_0123456789ab_x\x00y",
        "Bearer att_\u00e9_" + "x" * 43,
        "Bearer att_" + "a" * 5000 + "_x",
    ],
)
def test_unknown_or_malformed_credentials_are_401(api, header, ledger):
    api.credentials(HTTP_AUTHORIZATION=header)
    assert api.post("/v1/recall", {"subject": "u"}, format="json").status_code == 401


def test_a_right_prefix_with_a_wrong_secret_is_401(api, ledger):
    prefix = ledger.token.split("_")[1]
    api.credentials(HTTP_AUTHORIZATION=f"Bearer att_{prefix}_{'x' * 43}")
    assert api.post("/v1/recall", {"subject": "u"}, format="json").status_code == 401


def test_the_secret_is_stored_hashed(ledger):
    credential = Credential.objects.get(project=ledger.project)
    assert ledger.token not in credential.secret_sha256
    assert credential.prefix in ledger.token


def test_a_revoked_credential_is_refused(ledger):
    credential_revoke(credential=Credential.objects.get(project=ledger.project), actor="test")
    response = ledger.recall("u")
    assert response.status_code == 401


def test_a_suspended_project_answers_403(ledger):
    Project.objects.filter(pk=ledger.project.pk).update(suspended_at=timezone.now())
    response = ledger.recall("u")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "project_suspended"


def test_create_project_prints_a_working_credential_last():
    out = io.StringIO()
    call_command("create_project", "acme", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = client.post("/v1/recall", {"subject": "u"}, format="json")
    assert response.status_code == 200
    assert Project.objects.get(name="acme").credentials.count() == 1


def test_create_credential_adds_another_working_credential():
    call_command("create_project", "acme", stdout=io.StringIO())
    out = io.StringIO()
    call_command("create_credential", "acme", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.post("/v1/recall", {"subject": "u"}, format="json").status_code == 200
    assert Project.objects.get(name="acme").credentials.count() == 2


def test_create_credential_for_an_unknown_project_fails_loudly():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_credential", "nope", stdout=io.StringIO())


def test_each_credential_has_a_request_budget(ledger, settings):
    settings.ATTEST_LEDGER_RATE = "2/d"
    answers = [ledger.recall("u"), ledger.recall("u")]
    assert [a.status_code for a in answers] == [200, 200]
    assert [a["RateLimit-Policy"] for a in answers] == ['"ledger";q=2;w=86400'] * 2
    assert [a["RateLimit"].split(";")[1] for a in answers] == ["r=1", "r=0"]
    refused = ledger.recall("u")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("rate_limited", "credential_requests")
    # The wait is what is left of this credential's day, not a fixed minute.
    prefix = ledger.project.credentials.get().prefix
    now = time.time()
    left = window_end(prefix, 86400, now, inclusive=counts_in_cache()) - int(now)
    assert abs(int(refused["Retry-After"]) - left) <= 1
    assert refused["RateLimit"] == f'"ledger";r=0;t={refused["Retry-After"]}'
    assert refused["RateLimit-Policy"] == '"ledger";q=2;w=86400'


@pytest.mark.parametrize("value", ["fast", "0/m", "10/0m", "10/00h", "10/week", "10"])
def test_a_malformed_ledger_rate_stops_start_up(value, monkeypatch):
    import environ
    from django.core.exceptions import ImproperlyConfigured

    from attest.config import request_rate

    monkeypatch.setenv("ATTEST_LEDGER_RATE", value)
    with pytest.raises(ImproperlyConfigured):
        request_rate(environ.Env(), "ATTEST_LEDGER_RATE", default="1200/m")
