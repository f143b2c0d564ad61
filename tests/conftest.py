"""Fixtures shared by every app's tests."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``postgres`` when the suite runs on SQLite."""
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL=postgres://...)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)
