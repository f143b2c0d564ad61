"""The change feed under concurrent writers on PostgreSQL: numbers follow commit order."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from citations.selectors.changes import change_feed
from citations.services import MessageIn, observations_ingest
from tests.citations.conftest import make_ledger
from tests.citations.test_lifecycle_concurrency import client_for, in_thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

AT = "2026-03-04T10:00:00Z"


def feed(client, after=None) -> tuple[list[int], dict | None]:
    body = {"limit": 200} if after is None else {"limit": 200, "after": after}
    answer = client.post("/v1/changes", body, format="json").json()
    return [c["id"] for c in answer["changes"]], answer.get("next")


def test_a_writer_that_commits_later_never_lands_behind_a_page_already_read():
    ledger = make_ledger()
    client = client_for(ledger)
    holding, release = threading.Event(), threading.Event()

    def slow_writer():
        with transaction.atomic():
            observations_ingest(
                project=ledger.project,
                subject_id="slow",
                messages=[MessageIn("s1", "user", "I live in Oslo.", _at())],
                actor="test",
            )
            holding.set()
            assert release.wait(30)

    slow = in_thread(slow_writer)
    assert holding.wait(30)
    fast = in_thread(
        lambda: client_for(ledger).post(
            "/v1/observations",
            {
                "subject": "fast",
                "messages": [
                    {"id": "f1", "role": "user", "text": "I live in Bergen.", "occurred_at": AT}
                ],
            },
            format="json",
        )
    )
    fast.join(1.0)
    # The later writer waits for the project's change lock the first one holds ...
    assert fast.is_alive()
    # ... so a reader sees nothing yet, rather than the later change alone. (Read through
    # the selector: the route's audit event would wait for the same lock.)
    assert change_feed(project=ledger.project).changes == []
    release.set()
    slow.join(30)
    fast.join(30)
    changes = client.post("/v1/changes", {}, format="json").json()["changes"]
    assert [c["subject"] for c in changes] == ["slow", "fast"]


def _at():
    from django.utils.dateparse import parse_datetime

    return parse_datetime(AT)


def test_paging_while_writers_commit_sees_every_change_once_in_order():
    ledger = make_ledger()
    reader = client_for(ledger)
    done = threading.Event()
    collected: list[int] = []

    def writer(name: str):
        client = client_for(ledger)
        for i in range(6):
            client.post(
                "/v1/observations",
                {
                    "subject": name,
                    "messages": [
                        {
                            "id": f"{name}-{i}",
                            "role": "user",
                            "text": f"I like thing {i}.",
                            "occurred_at": AT,
                        }
                    ],
                },
                format="json",
            )

    def read():
        after = None
        while True:
            finished = done.is_set()
            ids, following = feed(reader, after)
            collected.extend(ids)
            after = following or after
            if finished and not ids:
                return

    writers = [in_thread(lambda n=n: writer(n)) for n in ("a", "b", "c")]
    reading = in_thread(read)
    for thread in writers:
        thread.join(60)
    done.set()
    reading.join(60)
    everything = [
        c["id"] for c in reader.post("/v1/changes", {"limit": 200}, format="json").json()["changes"]
    ]
    assert len(everything) == 18
    assert collected == everything
