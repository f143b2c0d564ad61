"""Fixtures shared by every app's tests."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from billing.apps import load_payment_stack

# The suite runs the way a served process does: the payment stack loaded up front, with the
# recursion limit it raises put back (attest/wsgi.py does the same for gunicorn).
load_payment_stack()


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


@pytest.fixture(autouse=True)
def _generous_unpaid_limit(settings):
    """Every test calls from 127.0.0.1: a limit generous enough that no test throttles the
    next. Tests of the limit set their own rate (its counts are kept per rate)."""
    settings.ATTEST_UNPAID_RATE = "1000000/m"


@pytest.fixture(scope="session", autouse=True)
def _receipt_signing_keys(tmp_path_factory):
    """Every test signs receipts with a throwaway key in a temp dir, never one under var/."""
    from datetime import UTC, datetime

    from django.test import override_settings

    from receipts.keyring import ensure_key

    directory = tmp_path_factory.mktemp("signing_keys")
    ensure_key(str(directory), now=datetime.now(UTC))
    with override_settings(ATTEST_SIGNING_KEYS=str(directory)):
        yield directory


@pytest.fixture(scope="session", autouse=True)
def _no_crossref_unless_asked():
    """DOI lookups are off unless a test points them at its own Crossref server: no test
    ever reaches the real api.crossref.org."""
    from django.test import override_settings

    with override_settings(ATTEST_CROSSREF_URL=""):
        yield


_LOG_DELETE_TRIGGERS: dict[str, str] = {}


def _transactional(request) -> bool | None:
    """True for a test that commits (and is flushed after), False for one rolled back,
    None for one without the database."""
    marker = request.node.get_closest_marker("django_db")
    names = set(request.fixturenames)
    if {"transactional_db", "live_server"} & names:
        return True
    if marker is not None:
        return bool(marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    return False if "db" in names else None


# PostgreSQL: the statement triggers that refuse TRUNCATE on the append-only logs (receipts
# 0004, citations 0012), which Django's flush after a committing test runs.
_TRUNCATE_TRIGGERS = (
    ("receipts_logleaf", "receipts_logleaf_no_truncate"),
    ("receipts_lognode", "receipts_lognode_no_truncate"),
    ("citations_auditevent", "citations_auditevent_no_truncate"),
)
_truncate_disabled = False


@pytest.fixture(autouse=True)
def _logs_flushable(request, django_db_blocker):
    """Django empties a committing test's tables after it, which the append-only logs'
    triggers refuse: with DELETE on SQLite, with TRUNCATE on PostgreSQL. Around that flush
    only (test harness, never the service) the refusing triggers are set aside, and they
    are back before the next test begins: on SQLite dropped and made again from their own
    stored SQL, on PostgreSQL disabled and enabled again, outside any test's transaction."""
    global _truncate_disabled
    transactional = _transactional(request)
    if transactional is None:
        yield
        return
    if connection.vendor == "postgresql":
        if _truncate_disabled:
            with django_db_blocker.unblock(), connection.cursor() as cursor:
                for table, trigger in _TRUNCATE_TRIGGERS:
                    cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")
            _truncate_disabled = False
        request.getfixturevalue("_django_db_helper")
        yield
        if transactional:
            with connection.cursor() as cursor:
                for table, trigger in _TRUNCATE_TRIGGERS:
                    cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
            _truncate_disabled = True
        return
    request.getfixturevalue("_django_db_helper")
    with connection.cursor() as cursor:
        for sql in _LOG_DELETE_TRIGGERS.values():
            cursor.execute(sql.replace("CREATE TRIGGER", "CREATE TRIGGER IF NOT EXISTS", 1))
    yield
    if not transactional:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
            "AND tbl_name IN ('receipts_logleaf', 'receipts_lognode') AND name LIKE '%no_delete'"
        )
        for name, sql in cursor.fetchall():
            _LOG_DELETE_TRIGGERS[name] = sql
            cursor.execute(f'DROP TRIGGER "{name}"')
