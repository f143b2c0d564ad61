"""GET /readyz: ready only with every migration applied, the cache answering (when one is
configured) and a signing key loaded; otherwise 503 naming each check that failed."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from tests.redis_outage import redis_down

pytestmark = pytest.mark.django_db


def test_ready_when_every_check_passes(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_a_migration_not_applied_is_503_naming_it(client):
    recorder = MigrationRecorder(connection)
    recorder.record_unapplied("citations", "0001_initial")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body["status"] == "not_ready"
    assert list(body["failed"]) == ["database"]
    assert "citations.0001_initial" in body["failed"]["database"]


def test_no_signing_key_is_503_naming_the_key(client, settings, tmp_path):
    settings.ATTEST_SIGNING_KEYS = str(tmp_path / "no-keys-here")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert list(response.json()["failed"]) == ["signing_key"]


def test_a_configured_cache_that_does_not_answer_is_503_naming_the_cache(client):
    with redis_down():
        response = client.get("/readyz")
    assert response.status_code == 503
    assert list(response.json()["failed"]) == ["cache"]


def test_healthz_stays_200_when_only_readiness_fails(client, settings, tmp_path):
    settings.ATTEST_SIGNING_KEYS = str(tmp_path / "no-keys-here")
    assert client.get("/readyz").status_code == 503
    assert client.get("/healthz").status_code == 200
