"""Rebuilds: every one admits a new generation, retires what it replaces, and keeps the links."""

from __future__ import annotations

import pytest

from citations.models import AuditEvent, Generation
from tests.citations.worker import run_worker, uses_worker

pytestmark = pytest.mark.django_db


def _only_fact(ledger, subject="u", **extra) -> dict:
    facts = ledger.recall(subject, **extra).json()["facts"]
    assert len(facts) == 1, facts
    return facts[0]


def _rebuild(ledger, **body):
    return ledger.client.post("/v1/rebuilds", body, format="json")


def test_source_rebuild_retires_the_old_fact_and_admits_a_new_generation(ledger):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    old = _only_fact(ledger)

    response = _rebuild(ledger, subject="u", message_id="m1")

    assert response.status_code == 201, response.content
    body = response.json()
    generation = body["generation"]
    assert generation["kind"] == "source"
    assert generation["state"] == "done"
    assert generation["subject"] == "u" and generation["message_id"] == "m1"
    assert (body["retired"], body["admitted"]) == (1, 1)
    retired = ledger.resolve(old["id"]).json()
    assert retired["status"] == "reinterpreted"
    assert retired["reinterpreted_by"] == generation["id"]
    assert retired["known"]["until"] is not None
    new = _only_fact(ledger)
    assert new["id"] != old["id"]
    assert new["statement"] == old["statement"]
    assert new["generation"] == generation["id"]
    assert new["status"] == "current"
    assert ledger.resolve(new["id"]).json()["evidence"][0]["source_message_id"] == "m1"


def test_each_rebuild_is_a_new_generation_even_with_nothing_changed(ledger):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    first = _rebuild(ledger, subject="u", message_id="m1").json()["generation"]["id"]
    after_first = _only_fact(ledger)

    second = _rebuild(ledger, subject="u", message_id="m1").json()["generation"]["id"]

    assert second != first
    resolved = ledger.resolve(after_first["id"]).json()
    assert (resolved["status"], resolved["reinterpreted_by"]) == ("reinterpreted", second)
    assert _only_fact(ledger)["generation"] == second


def test_source_rebuild_keeps_the_evidence_of_other_messages(ledger):
    ledger.ingest(
        "u",
        ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"),
        ("m2", "I live in Dublin, still.", "2026-03-05T10:00:00Z"),
    )
    _rebuild(ledger, subject="u", message_id="m1")

    new = _only_fact(ledger)
    sources = {row["source_message_id"] for row in ledger.resolve(new["id"]).json()["evidence"]}
    assert sources == {"m1", "m2"}


def test_source_rebuild_links_the_new_timeline_by_supersession(ledger):
    ledger.ingest(
        "u",
        ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z"),
        ("m2", "I moved to Cork in May.", "2026-05-04T10:00:00Z"),
    )
    body = _rebuild(ledger, subject="u", message_id="m1").json()

    assert body["retired"] == 2  # the whole lives_in timeline the message sits in
    generation = body["generation"]["id"]
    facts = ledger.recall("u", as_of={"valid_at": "2026-04-01T00:00:00Z"}).json()["facts"]
    dublin = next(f for f in facts if f["value"] == "Dublin")
    cork = _only_fact(ledger)
    assert cork["generation"] == dublin["generation"] == generation
    assert dublin["superseded_by"] == cork["id"]
    assert dublin["status"] == "validity_closed"


def test_source_rebuild_leaves_other_facts_alone(ledger):
    ledger.ingest(
        "u",
        ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"),
        ("m2", "I work at Acme.", "2026-03-05T10:00:00Z"),
    )
    works = _only_fact(ledger, predicate="works_at")
    _rebuild(ledger, subject="u", message_id="m1")
    assert ledger.resolve(works["id"]).json()["status"] == "current"


def test_rebuild_of_an_unknown_message_or_subject_is_not_found(ledger, other_ledger):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    ledger.ingest("v", ("m2", "I live in Cork.", "2026-03-04T10:00:00Z"))
    cases = [
        (ledger, {"subject": "u", "message_id": "nope"}),
        (ledger, {"subject": "nobody", "message_id": "m1"}),
        (ledger, {"subject": "u", "message_id": "m2"}),  # another subject's message
        (other_ledger, {"subject": "u", "message_id": "m1"}),  # another project
    ]
    for who, body in cases:
        response = _rebuild(who, **body)
        assert response.status_code == 404, body
        assert response.json()["error"]["code"] == "not_found"
    assert not Generation.objects.exclude(kind="ingest").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "subject"),
        ({"subject": "u"}, "message_id"),
        ({"subject": 123, "message_id": "m1"}, "subject"),
        ({"subject": "u", "message_id": 7}, "message_id"),
        ({"scope": "project", "subject": "u"}, "subject"),
        ({"scope": "everything"}, "scope"),
        ({"scope": ["project"]}, "scope"),
    ],
)
def test_malformed_rebuild_requests_name_the_field(ledger, body, field):
    response = _rebuild(ledger, **body)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field


@uses_worker
def test_project_rebuild_runs_on_the_task_worker(ledger):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    ledger.ingest(
        "v",
        ("m2", "I like tea.", "2026-03-04T10:00:00Z"),
        ("m3", "I moved to Cork in May.", "2026-05-04T10:00:00Z"),
    )
    before = [_only_fact(ledger, "u"), *ledger.recall("v").json()["facts"]]
    assert len(before) == 3

    response = _rebuild(ledger, scope="project")

    assert response.status_code == 202
    queued = response.json()
    generation = queued["generation"]["id"]
    assert queued["generation"]["state"] == "running"
    assert queued["generation"]["kind"] == "project"
    # Nothing changes until the worker runs the job.
    assert ledger.resolve(before[0]["id"]).json()["status"] == "current"

    run_worker()

    done = ledger.client.get(f"/v1/rebuilds/{generation}").json()
    assert done["generation"]["state"] == "done"
    assert done["generation"]["progress"] == {"subjects_done": 2, "subjects_total": 2}
    assert (done["retired"], done["admitted"]) == (3, 3)
    for fact in before:
        resolved = ledger.resolve(fact["id"]).json()
        assert (resolved["status"], resolved["reinterpreted_by"]) == ("reinterpreted", generation)
    after = [_only_fact(ledger, "u"), *ledger.recall("v").json()["facts"]]
    assert {f["generation"] for f in after} == {generation}
    assert sorted(f["statement"] for f in after) == sorted(f["statement"] for f in before)
    assert AuditEvent.objects.filter(operation="rebuild.project.done").count() == 1


@uses_worker
def test_a_second_project_rebuild_waits_for_the_first(ledger):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    first = _rebuild(ledger, scope="project")
    second = _rebuild(ledger, scope="project")
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "rebuild_running"
    run_worker()
    assert _rebuild(ledger, scope="project").status_code == 202
    assert first.status_code == 202


@uses_worker
def test_admin_shows_a_project_rebuild_s_progress(ledger, admin_client):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    generation = _rebuild(ledger, scope="project").json()["generation"]["id"]
    page = admin_client.get("/admin/citations/generation/").content.decode()
    assert "running" in page and "0 of 1 subjects" in page
    run_worker()
    page = admin_client.get(f"/admin/citations/generation/{generation}/change/").content.decode()
    assert "1 of 1 subjects" in page and "done" in page


def test_a_rebuild_is_followed_only_by_its_project(ledger, other_ledger):
    ledger.ingest("u", ("m1", "I live in Dublin.", "2026-03-04T10:00:00Z"))
    generation = _rebuild(ledger, subject="u", message_id="m1").json()["generation"]["id"]
    ingest_generation = Generation.objects.get(kind="ingest").pk

    assert ledger.client.get(f"/v1/rebuilds/{generation}").status_code == 200
    assert other_ledger.client.get(f"/v1/rebuilds/{generation}").status_code == 404
    assert ledger.client.get(f"/v1/rebuilds/{ingest_generation}").status_code == 404


@uses_worker
def test_a_project_rebuild_keeps_retractions_and_authored_records(ledger):
    ledger.ingest(
        "u",
        ("m1", "I like tea.", "2026-03-04T10:00:00Z"),
        ("m2", "I like jazz.", "2026-03-05T10:00:00Z"),
    )
    tea = _only_fact(ledger, predicate="likes", query="tea")
    ledger.client.post(f"/v1/facts/{tea['id']}/retract", {"reason": "joke"}, format="json")
    authored = ledger.client.post(
        "/v1/facts",
        {
            "subject": "u",
            "predicate": "works_at",
            "statement": "I work at Acme.",
            "value": "Acme",
            "authored_by": "support:ana",
        },
        format="json",
    ).json()

    generation = _rebuild(ledger, scope="project").json()["generation"]["id"]
    run_worker()

    # The retracted claim is not read back into a fact; the authored record is not a reading.
    values = sorted(f["value"] for f in ledger.recall("u").json()["facts"])
    assert values == ["Acme", "jazz"]
    assert ledger.resolve(authored["id"]).json()["status"] == "current"
    assert ledger.resolve(tea["id"]).json()["status"] == "retracted"
    jazz = _only_fact(ledger, predicate="likes")
    assert jazz["generation"] == generation


def test_an_authored_record_is_not_a_source_to_rebuild(ledger):
    from citations.models import Observation

    body = {
        "subject": "u",
        "predicate": "works_at",
        "statement": "I work at Acme.",
        "value": "Acme",
        "authored_by": "support:ana",
    }
    assert ledger.client.post("/v1/facts", body, format="json").status_code == 201
    message_id = Observation.objects.get().message_id
    response = _rebuild(ledger, subject="u", message_id=message_id)
    assert response.status_code == 404
    assert len(ledger.recall("u").json()["facts"]) == 1


def test_a_rebuild_reads_relative_dates_on_the_senders_calendar(ledger):
    # Sent at 23:30 on 4 March in New York (04:30 on 5 March in UTC): "yesterday" is 3 March.
    ledger.ingest("u", ("m1", "I moved to Lisbon yesterday.", "2026-03-04T23:30:00-05:00"))
    first = _only_fact(ledger)
    assert ledger.resolve(first["id"]).json()["valid"]["from"] == "2026-03-03T05:00:00Z"

    _rebuild(ledger, subject="u", message_id="m1")

    rebuilt = _only_fact(ledger)
    assert rebuilt["id"] != first["id"]
    assert ledger.resolve(rebuilt["id"]).json()["valid"]["from"] == "2026-03-03T05:00:00Z"
