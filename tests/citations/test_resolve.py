"""POST /v1/citations/resolve: fields, paging, the page cap, and every error of the seed."""

from __future__ import annotations

import uuid

import pytest

from citations.models import Evidence, Fact, Observation
from citations.selectors import PAGE_BYTES
from tests.citations.factories import EvidenceFactory, FactVersionFactory, ObservationFactory

pytestmark = pytest.mark.django_db

SEED_TEXT = "I moved to Dublin in March. Still settling in."


def seed_fact(ledger) -> str:
    response = ledger.ingest("user-1", ("m1", SEED_TEXT, "2026-03-04T10:11:58Z"))
    return response.json()["facts"][0]["id"]


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"]["code"] == code
    assert "evidence" not in body
    return body["error"]


def test_resolve_returns_the_seed_fields(ledger):
    fact_id = seed_fact(ledger)
    body = ledger.resolve(fact_id, limit=8).json()
    assert body["id"] == fact_id
    assert isinstance(body["version"], str) and body["version"]
    assert body["predicate"] == "lives_in"
    assert body["statement"] == "I moved to Dublin in March."
    assert body["source_role"] == "user"
    assert body["status"] == "current"
    assert body["known"]["until"] is None
    assert body["known"]["from_inclusive"] is True
    assert body["known"]["until_inclusive"] is False
    [evidence] = body["evidence"]
    observation = Observation.objects.get(message_id="m1")
    assert evidence == {
        "source": "message",
        "source_observation_id": str(observation.pk),
        "source_message_id": "m1",
        "source_ordinal": 0,
        "role": "user",
        "occurred_at": "2026-03-04T10:11:58Z",
        "quote": "I moved to Dublin in March",
        "byte_start": 0,
        "byte_end": 26,
        "context": SEED_TEXT,
        "context_complete": True,
        "extractor_version": Evidence.objects.get().extractor_version,
    }
    assert evidence["extractor_version"].startswith("extract/v3:")
    assert "next" not in body


def test_offsets_are_bytes_when_multibyte_text_precedes_the_quote(ledger):
    text = "Café ☕ crème brûlée — 東京 was lovely! I moved to Dublin in March."
    response = ledger.ingest("u", ("m1", text, "2026-03-04T10:11:58Z"))
    [evidence] = ledger.resolve(response.json()["facts"][0]["id"]).json()["evidence"]
    raw = text.encode("utf-8")
    assert evidence["byte_start"] == raw.index(b"I moved")
    assert evidence["byte_start"] != text.index("I moved")
    assert raw[evidence["byte_start"] : evidence["byte_end"]].decode() == evidence["quote"]
    assert evidence["quote"] == "I moved to Dublin in March"


def test_long_messages_get_a_bounded_context_that_says_it_is_partial(ledger):
    text = "x" * 2000 + ". I live in Galway. " + "y" * 2000
    response = ledger.ingest("u", ("m1", text, "2026-03-04T10:11:58Z"))
    [evidence] = ledger.resolve(response.json()["facts"][0]["id"]).json()["evidence"]
    assert evidence["context_complete"] is False
    assert "I live in Galway" in evidence["context"]
    assert len(evidence["context"].encode()) < 1000


def test_paging_walks_every_evidence_row_until_next_is_missing(ledger):
    messages = [
        (f"m{i}", f"Day {i}. I live in Galway.", f"2026-03-{1 + i:02d}T10:00:00Z")
        for i in range(20)
    ]
    response = ledger.ingest("u", *messages)
    fact_id = response.json()["facts"][0]["id"]
    assert Evidence.objects.filter(fact_id=fact_id).count() == 20

    seen, pages, after = [], 0, None
    while True:
        body = {"limit": 6} if after is None else {"limit": 6, "after": after}
        page = ledger.resolve(fact_id, **body).json()
        pages += 1
        assert len(page["evidence"]) <= 6
        seen += [row["source_message_id"] for row in page["evidence"]]
        if "next" not in page:
            break
        after = page["next"]
    assert pages == 4
    assert seen == [f"m{i}" for i in range(20)]


def test_limit_defaults_to_eight(ledger):
    messages = [(f"m{i}", "I live in Galway.", f"2026-03-{1 + i:02d}T10:00:00Z") for i in range(10)]
    fact_id = ledger.ingest("u", *messages).json()["facts"][0]["id"]
    body = ledger.resolve(fact_id).json()
    assert len(body["evidence"]) == 8
    assert "next" in body


def big_evidence(ledger, sizes: list[int]) -> Fact:
    """A fact whose evidence rows each quote a whole message of the given size in bytes."""
    version = FactVersionFactory(
        fact__project=ledger.project, fact__subject__project=ledger.project
    )
    for size in sizes:
        EvidenceFactory(fact=version.fact, observation__text="é" * (size // 2))
    return version.fact


def test_a_page_stops_at_256_kib_of_text_with_fewer_sources(ledger):
    # Each row returns its quote and a context around it: about 120 KB of text per row.
    fact = big_evidence(ledger, [60_000, 60_000, 60_000, 60_000])
    first = ledger.resolve(fact.pk, limit=8).json()
    assert len(first["evidence"]) == 2
    size = sum(len(r["quote"].encode()) + len(r["context"].encode()) for r in first["evidence"])
    assert size <= PAGE_BYTES
    second = ledger.resolve(fact.pk, limit=8, after=first["next"]).json()
    assert len(second["evidence"]) == 2
    assert "next" not in second


def test_one_source_larger_than_the_page_is_citation_limit(ledger):
    fact = big_evidence(ledger, [300_000])
    error(ledger.resolve(fact.pk), 422, "citation_limit")


def test_unknown_other_projects_and_erased_ids_are_the_same_404(ledger, other_ledger):
    fact_id = seed_fact(ledger)
    erased_id = seed_fact(other_ledger)
    Fact.objects.filter(pk=erased_id).update(erased_at="2026-03-05T00:00:00Z")
    other_project_id = seed_fact(make_third(ledger))
    answers = [
        ledger.resolve(uuid.uuid4()),
        other_ledger.resolve(fact_id),
        other_ledger.resolve(erased_id),
        ledger.resolve(other_project_id),
    ]
    errors = [error(response, 404, "not_found") for response in answers]
    assert all(e == errors[0] for e in errors)


def make_third(ledger):
    from tests.citations.conftest import make_ledger

    return make_ledger()


@pytest.mark.parametrize(
    "payload",
    [
        {"id": "not-a-uuid"},
        {"id": 12},
        {},
        {"id": "VALID", "limit": 0},
        {"id": "VALID", "limit": "8"},
        {"id": "VALID", "limit": True},
        {"id": "VALID", "limit": None},
        {"id": "VALID", "limit": 8.5},
        {"id": "VALID", "limit": -1},
        {"id": "VALID", "after": "forged-cursor"},
        {"id": "VALID", "after": {"cursor": 7}},
    ],
)
def test_malformed_ids_and_page_parameters_are_invalid_citation(ledger, payload):
    fact_id = seed_fact(ledger)
    payload = {k: (fact_id if v == "VALID" else v) for k, v in payload.items()}
    response = ledger.client.post("/v1/citations/resolve", payload, format="json")
    error(response, 400, "invalid_citation")


def test_a_cursor_from_another_fact_is_invalid_citation(ledger):
    messages = [(f"m{i}", "I live in Galway.", f"2026-03-{1 + i:02d}T10:00:00Z") for i in range(3)]
    galway = ledger.ingest("u", *messages).json()["facts"][0]["id"]
    other = ledger.ingest("v", ("x1", "I like tea.", "2026-03-01T10:00:00Z")).json()["facts"][0][
        "id"
    ]
    page = ledger.resolve(galway, limit=1).json()
    error(ledger.resolve(other, after=page["next"]), 400, "invalid_citation")


def test_limit_32_is_accepted(ledger):
    assert ledger.resolve(seed_fact(ledger), limit=32).status_code == 200


def test_limit_33_is_invalid_request_naming_limit(ledger):
    # Over the page's size is malformed, as every list over its size; citation_limit keeps
    # its seed meaning (a source too large to return).
    response = ledger.resolve(seed_fact(ledger), limit=33)
    details = error(response, 400, "invalid_request")["details"]
    assert details == {"field": "limit", "limit": 32, "count": 33}


def test_altered_stored_bytes_answer_500_without_any_evidence(ledger):
    fact_id = seed_fact(ledger)
    Observation.objects.filter(message_id="m1").update(
        content=SEED_TEXT.replace("Dublin", "Galway").encode()
    )
    response = ledger.resolve(fact_id)
    err = error(response, 500, "evidence_mismatch")
    assert set(err) == {"code", "message", "details"}


def test_offsets_that_no_longer_match_the_quote_answer_500(ledger):
    fact_id = seed_fact(ledger)
    # Rows cannot be edited (a trigger refuses it), so the bad offsets come as a new row.
    row = Evidence.objects.get(fact_id=fact_id)
    Evidence.objects.filter(pk=row.pk).update(known_until=row.created_at)
    row.pk, row.byte_start, row.known_until = None, 1, None
    row.save()
    error(ledger.resolve(fact_id), 500, "evidence_mismatch")


def test_one_bad_row_on_a_page_withholds_the_whole_page(ledger):
    messages = [(f"m{i}", "I live in Galway.", f"2026-03-{1 + i:02d}T10:00:00Z") for i in range(3)]
    fact_id = ledger.ingest("u", *messages).json()["facts"][0]["id"]
    Observation.objects.filter(message_id="m2").update(content=b"I live in Gxlway.")
    error(ledger.resolve(fact_id), 500, "evidence_mismatch")


def test_bytes_are_checked_on_every_request_not_cached(ledger):
    fact_id = seed_fact(ledger)
    assert ledger.resolve(fact_id).status_code == 200
    observation = ObservationFactory.build(text="tampered")
    Observation.objects.filter(message_id="m1").update(content=observation.content)
    error(ledger.resolve(fact_id), 500, "evidence_mismatch")


@pytest.mark.parametrize(
    "known_at",
    ["0466-05-12T03:48:07.3+16:43", "0001-01-01T00:00:00+01:00", "2026-01-01T00:00:00-14:30"],
)
def test_an_as_of_time_no_zone_has_or_outside_the_calendar_is_invalid_citation(ledger, known_at):
    # Found by schemathesis: +16:43 reached PostgreSQL, which refuses it, as a 500.
    fact_id = seed_fact(ledger)
    response = ledger.resolve(fact_id, as_of={"known_at": known_at})
    assert error(response, 400, "invalid_citation")["details"]["field"] == "as_of.known_at"
