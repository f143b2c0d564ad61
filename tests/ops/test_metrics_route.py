"""/metrics in one process: who may read it, and that a request is labelled by its URL
pattern's name, never by its path."""

from __future__ import annotations

import pytest

from tests.ops.test_metrics_live import samples, value

pytestmark = pytest.mark.django_db


def test_loopback_reads_metrics_a_remote_address_gets_the_404_error(client):
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    remote = client.get("/metrics", REMOTE_ADDR="198.51.100.7")
    assert remote.status_code == 404
    assert remote.json()["error"]["code"] == "not_found"


def test_the_token_opens_metrics_to_a_remote_scraper(client, settings):
    settings.ATTEST_METRICS_TOKEN = "s3cret-token"
    good = client.get(
        "/metrics", REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION="Bearer s3cret-token"
    )
    assert good.status_code == 200
    bad = client.get("/metrics", REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION="Bearer s3cret")
    assert bad.status_code == 404


def test_requests_are_counted_by_pattern_name_and_unmatched_paths_share_one_label(client):
    before = samples(client.get("/metrics").content.decode())
    client.get("/v1/rebuilds/101")  # unauthenticated, under the pattern's name
    client.get("/v1/rebuilds/102")
    client.get("/no/such/path/123")
    client.get("/no/such/path/456")
    after = samples(client.get("/metrics").content.decode())

    def moved(**labels: str) -> float:
        name = "attest_http_requests_total"
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved(route="unmatched", status="404") == 2
    assert moved(route="rebuild", method="GET") == 2
    assert not any(dict(labels).get("route", "").startswith("/") for _name, labels in after)
