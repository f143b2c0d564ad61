"""A Crossref server on loopback for every test here, holding the works of ``works.py``."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.verification.crossref.server import CrossrefServer
from tests.verification.crossref.works import every_work


@pytest.fixture(scope="session")
def _crossref_server() -> CrossrefServer:
    server = CrossrefServer().start()
    yield server
    server.stop()


@pytest.fixture
def crossref(_crossref_server: CrossrefServer, settings) -> CrossrefServer:
    """The server with every test work, our settings pointed at it, the pace state fresh."""
    _crossref_server.reset()
    _crossref_server.add(*every_work())
    settings.ATTEST_CROSSREF_URL = _crossref_server.url
    settings.ATTEST_CROSSREF_MAILTO = "ops@attest.example"
    settings.ATTEST_CROSSREF_TIMEOUT = 5.0
    cache.clear()  # the pacing state lives here when the cache is Redis
    yield _crossref_server
    _crossref_server.reset()
    cache.clear()
