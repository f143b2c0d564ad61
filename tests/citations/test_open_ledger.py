"""The open ledger (issue 24): declared predicates and facts a client extracted itself."""

from __future__ import annotations

import hashlib

import pytest

from citations.extract.predicates import BUILTIN_PREDICATES
from citations.models import AuditEvent, DeclaredPredicate, Evidence, Fact, FactVersion
from citations.selectors.facts import EvidenceMismatch
from citations.vocabulary import BUILTIN_SYNONYMS

pytestmark = pytest.mark.django_db

T1 = "2026-03-04T10:00:00Z"
T2 = "2026-05-01T09:00:00Z"


def declare(ledger, name="prefers_theme", cardinality="one", **extra):
    body = {"name": name, "cardinality": cardinality, **extra}
    return ledger.client.post("/v1/predicates", body, format="json")


def record(ledger, **body):
    payload = {"subject": "u", "predicate": "prefers_theme", **body}
    return ledger.client.post("/v1/facts", payload, format="json")


def quote(message_id, text, **extra):
    return {"message_id": message_id, "quote": text, **extra}


def counts():
    return (Fact.objects.count(), FactVersion.objects.count(), Evidence.objects.count())


# --- declaring ---------------------------------------------------------------


def test_the_list_starts_with_every_builtin_then_the_declared(ledger):
    assert declare(ledger, "zeta_pref", "many", description="Z.").status_code == 201
    assert declare(ledger, "alpha_pref").status_code == 201
    listed = ledger.client.get("/v1/predicates").json()["predicates"]
    builtins = [
        {
            "name": p.name,
            "cardinality": p.cardinality,
            "builtin": True,
            "description": p.description,
            "synonyms": list(BUILTIN_SYNONYMS[p.name]),
        }
        for p in BUILTIN_PREDICATES
    ]
    assert listed[: len(builtins)] == builtins
    assert listed[len(builtins) :] == [
        {
            "name": "alpha_pref",
            "cardinality": "one",
            "builtin": False,
            "description": "",
            "synonyms": [],
        },
        {
            "name": "zeta_pref",
            "cardinality": "many",
            "builtin": False,
            "description": "Z.",
            "synonyms": [],
        },
    ]


def test_declaring_again_is_200_with_the_same_object_and_audited(ledger):
    first = declare(ledger, description="The UI theme.")
    again = declare(ledger, description="The UI theme.")
    assert (first.status_code, again.status_code) == (201, 200)
    assert (
        first.json()
        == again.json()
        == {
            "name": "prefers_theme",
            "cardinality": "one",
            "builtin": False,
            "description": "The UI theme.",
            "synonyms": [],
        }
    )
    assert DeclaredPredicate.objects.count() == 1
    assert AuditEvent.objects.filter(operation="predicate.declare").count() == 2


@pytest.mark.parametrize(
    ("name", "cardinality"), [("lives_in", "one"), ("speaks", "many"), ("lives_in", "many")]
)
def test_a_builtin_name_is_a_conflict(ledger, name, cardinality):
    response = declare(ledger, name, cardinality)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "predicate_conflict"
    assert not DeclaredPredicate.objects.exists()


def test_another_cardinality_is_a_conflict(ledger):
    declare(ledger, cardinality="one")
    response = declare(ledger, cardinality="many")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "predicate_conflict"
    assert DeclaredPredicate.objects.get().cardinality == "one"


@pytest.mark.parametrize("name", ["Prefers", "1abc", "_x", "a-b", "a" * 65, "", "é"])
def test_a_bad_name_is_refused(ledger, name):
    response = declare(ledger, name)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "name"


NAMES = [
    "my_theme",
    "a" * 64,
    "  prefers_theme\t",
    "Prefers",
    "1abc",
    "_x",
    "a-b",
    "a" * 65,
    "",
    "é",
]


@pytest.mark.parametrize("name", NAMES)
def test_the_schema_states_the_name_rule_the_route_applies(ledger, name):
    """The one pattern in the schema of ``name`` is the rule itself (the name is not trimmed,
    so padding is refused too), so a client reading the schema knows which names are refused."""
    import re

    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator(urlconf="wiring.urls").get_schema(request=None, public=True)
    field = schema["components"]["schemas"]["PredicateInRequest"]["properties"]["name"]
    stated = re.search(field["pattern"], name) is not None and len(name) <= field["maxLength"]
    response = declare(ledger, name)
    assert (response.status_code == 201) == stated, (name, response.content)
    if not stated and name.strip() and len(name) <= field["maxLength"]:
        error = response.json()["error"]
        assert error["message"].startswith("name: must match ^[a-z][a-z0-9_]{0,63}$"), error


def test_a_64_character_name_is_accepted_and_stored_whole(ledger):
    name = "a" + "b" * 63
    assert declare(ledger, name).status_code == 201
    ledger.ingest("u", ("m1", "Theme: dark.", T1))
    body = record(ledger, predicate=name, evidence=[quote("m1", "dark")]).json()
    assert Fact.objects.get(pk=body["id"]).predicate == name


def test_a_bad_cardinality_is_refused(ledger):
    response = declare(ledger, cardinality="several")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "cardinality"


def test_predicates_are_per_project(ledger, other_ledger):
    declare(ledger)
    names = [p["name"] for p in other_ledger.client.get("/v1/predicates").json()["predicates"]]
    assert "prefers_theme" not in names
    other_ledger.ingest("u", ("m1", "Theme: dark.", T1))
    refused = record(other_ledger, evidence=[quote("m1", "dark")])
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["field"] == "predicate"


# --- recording under a predicate -----------------------------------------------


def test_an_unknown_predicate_is_refused_naming_how_to_declare(ledger):
    ledger.ingest("u", ("m1", "I prefer dark mode.", T1))
    before = counts()
    response = record(ledger, predicate="prefers_ui", evidence=[quote("m1", "dark mode")])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"]["field"] == "predicate"
    assert "POST /v1/predicates" in error["message"]
    assert counts() == before


def test_an_authored_record_takes_a_declared_predicate(ledger):
    declare(ledger, "project_codename", "one")
    response = record(
        ledger, predicate="project_codename", statement="Codename Kestrel.", authored_by="pm"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["predicate"] == "project_codename"


def test_a_declared_one_valued_predicate_supersedes(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "Use the dark theme.", T1), ("m2", "Use the light theme.", T2))
    dark = record(ledger, evidence=[quote("m1", "dark theme")], value="dark").json()
    light = record(ledger, evidence=[quote("m2", "light theme")], value="light").json()
    old = ledger.resolve(dark["id"]).json()
    assert old["status"] == "validity_closed"
    assert old["superseded_by"] == light["id"]
    assert old["valid"]["until"] == T2
    assert ledger.resolve(light["id"]).json()["status"] == "current"
    assert Fact.objects.get(pk=light["id"]).functional


def test_a_declared_many_valued_predicate_accumulates(ledger):
    declare(ledger, "uses_framework", "many")
    ledger.ingest("u", ("m1", "I build with Django and React.", T1))
    a = record(ledger, predicate="uses_framework", evidence=[quote("m1", "Django")]).json()
    b = record(ledger, predicate="uses_framework", evidence=[quote("m1", "React")]).json()
    assert a["id"] != b["id"]
    assert {ledger.resolve(f["id"]).json()["status"] for f in (a, b)} == {"current"}


# --- message evidence ------------------------------------------------------------


def test_byte_offsets_are_those_of_the_raw_utf8_after_non_ascii_text(ledger):
    declare(ledger)
    text = "Olá! Ça va? 日本語のテスト — I prefer dark mode, always."
    ledger.ingest("u", ("m1", text, T1))
    response = record(
        ledger, evidence=[quote("m1", "I prefer dark mode")], extracted_by="my-extractor/3"
    )
    assert response.status_code == 201, response.json()
    [row] = response.json()["evidence"]
    raw = text.encode("utf-8")
    start = raw.index(b"I prefer dark mode")
    assert start != text.index("I prefer dark mode")  # code points differ from bytes here
    assert (row["byte_start"], row["byte_end"]) == (start, start + len(b"I prefer dark mode"))
    assert raw[row["byte_start"] : row["byte_end"]].decode() == row["quote"]
    assert row["source"] == "message"
    assert row["source_message_id"] == "m1"
    assert row["extractor_version"] == "client:my-extractor/3"
    assert row["quote"] in row["context"]
    stored = Evidence.objects.get()
    assert stored.quote_sha256 == hashlib.sha256(b"I prefer dark mode").hexdigest()
    body = response.json()
    assert body["statement"] == "I prefer dark mode"
    assert body["value"] == "I prefer dark mode"
    assert body["valid"]["from"] == T1  # by default from when the message was sent


def test_occurrence_picks_among_repeats(ledger):
    declare(ledger, "mood", "many")
    text = "ñ tea, ñ coffee, ñ tea."
    ledger.ingest("u", ("m1", text, T1))
    raw = text.encode()
    second = raw.index(b"\xc3\xb1 tea", 1)
    body = record(ledger, predicate="mood", evidence=[quote("m1", "ñ tea", occurrence=1)]).json()
    assert body["evidence"][0]["byte_start"] == second
    refused = record(ledger, predicate="mood", evidence=[quote("m1", "ñ tea", occurrence=2)])
    assert refused.status_code == 400
    assert refused.json()["error"]["details"] == {
        "field": "evidence[0].quote",
        "reason": "quote_not_in_message",
    }
    # One sentence a person can act on, not a template's "3 time(s)".
    message = refused.json()["error"]["message"]
    assert "(s)" not in message
    assert "occurrence 2" in message and "lower occurrence" in message


def test_extracted_by_defaults_to_client_and_the_credential_is_the_author(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark", T1))
    [row] = record(ledger, evidence=[quote("m1", "dark")]).json()["evidence"]
    assert row["extractor_version"] == "client:client"
    assert Evidence.objects.get().authored_by  # the credential's actor


@pytest.mark.parametrize(
    "bad_quote",
    ["I prefer Dark mode", "I prefer dark mode ", "I prefer  dark mode", "prefer dárk"],
)
def test_a_quote_not_in_the_message_is_refused_and_nothing_written(ledger, bad_quote):
    declare(ledger)
    ledger.ingest("u", ("m1", "I prefer dark mode.", T1))
    before = (counts(), AuditEvent.objects.filter(operation="fact.author", outcome="ok").count())
    response = record(ledger, evidence=[quote("m1", bad_quote)])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"] == {"field": "evidence[0].quote", "reason": "quote_not_in_message"}
    assert (
        counts(),
        AuditEvent.objects.filter(operation="fact.author", outcome="ok").count(),
    ) == before


def test_unknown_erased_and_other_subjects_messages_are_not_found(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark", T1))
    ledger.ingest("v", ("m2", "dark", T1))
    ledger.ingest("u", ("m3", "dark", T1))
    erased = ledger.client.post("/v1/erasures", {"subject": "u", "message_id": "m3"}, format="json")
    assert erased.status_code in (200, 201, 202), erased.json()
    authored = record(ledger, predicate="likes", statement="dark", authored_by="x")
    assert authored.status_code == 201, authored.json()
    authored = authored.json()
    authored_message = Evidence.objects.get(fact_id=authored["id"]).observation.message_id
    before = counts()
    for message_id in ("nope", "m2", "m3", authored_message):
        response = record(ledger, evidence=[quote("m1", "dark"), quote(message_id, "dark")])
        assert response.status_code == 400, message_id
        assert response.json()["error"]["details"] == {
            "field": "evidence[1].message_id",
            "reason": "message_not_found",
        }, message_id
    assert counts() == before
    # A subject that does not exist yet is not created by a refusal.
    response = record(ledger, subject="new-subject", evidence=[quote("m1", "dark")])
    assert response.json()["error"]["details"]["reason"] == "message_not_found"
    assert not ledger.project.subjects.filter(external_id="new-subject").exists()


def test_evidence_must_be_one_kind_or_the_other(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark", T1))
    both = record(ledger, evidence=[{"message_id": "m1", "receipt": "x", "quote": "dark"}])
    neither = record(ledger, evidence=[{"quote": "dark"}])
    web_field = record(ledger, evidence=[quote("m1", "dark", index=1)])
    for response in (both, neither, web_field):
        assert response.status_code == 400
        assert response.json()["error"]["details"]["field"].startswith("evidence[0].")


def test_extracted_by_only_with_message_evidence_and_well_formed(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark", T1))
    alone = record(ledger, statement="dark", authored_by="x", extracted_by="m")
    assert alone.json()["error"]["details"]["field"] == "extracted_by"
    bad = record(ledger, evidence=[quote("m1", "dark")], extracted_by="x" * 58)
    assert bad.json()["error"]["details"]["field"] == "extracted_by"


def test_several_quotes_support_one_fact(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark, please", T1), ("m2", "I said dark.", T2))
    body = record(ledger, value="dark", evidence=[quote("m1", "dark"), quote("m2", "dark")]).json()
    assert [e["source_message_id"] for e in body["evidence"]] == ["m1", "m2"]
    assert Fact.objects.count() == 1


def test_resolve_re_reads_the_bytes(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "I prefer dark mode.", T1))
    body = record(ledger, evidence=[quote("m1", "dark mode")]).json()
    assert ledger.resolve(body["id"]).json()["evidence"][0]["quote"] == "dark mode"
    observation = Evidence.objects.get(extractor_version__startswith="client:").observation
    observation.content = b"I prefer pink mode."
    observation.save(update_fields=["content"])
    response = ledger.resolve(body["id"])
    assert response.status_code == EvidenceMismatch.status_code
    assert response.json()["error"]["code"] == EvidenceMismatch.code


# --- the lifecycle -------------------------------------------------------------------


def test_retraction_and_correction_of_a_client_fact(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark", T1))
    body = record(ledger, evidence=[quote("m1", "dark")]).json()
    response = ledger.client.post(
        f"/v1/facts/{body['id']}/retract",
        {"reason": "misread", "replacement": {"statement": "light", "value": "light"}},
        format="json",
    )
    assert response.status_code in (200, 201), response.json()
    assert ledger.resolve(body["id"]).json()["status"] == "retracted"
    replacement = response.json()["retraction"]["replacement"]
    assert ledger.resolve(replacement).json()["predicate"] == "prefers_theme"


def test_erasing_the_only_message_erases_the_client_fact(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "dark", T1), ("m2", "light", T2))
    gone = record(ledger, evidence=[quote("m1", "dark")]).json()
    kept = record(ledger, value="light", evidence=[quote("m2", "light"), quote("m1", "dark")])
    kept = kept.json()
    response = ledger.client.post(
        "/v1/erasures", {"subject": "u", "message_id": "m1"}, format="json"
    )
    assert response.status_code in (200, 201, 202), response.json()
    assert ledger.resolve(gone["id"]).status_code == 404
    survivor = ledger.resolve(kept["id"]).json()
    assert [e["source_message_id"] for e in survivor["evidence"]] == ["m2"]


def test_export_inventory_recall_and_audit_show_client_facts(ledger):
    declare(ledger)
    ledger.ingest("u", ("m1", "I prefer dark mode.", T1))
    body = record(ledger, evidence=[quote("m1", "dark mode")], extracted_by="x").json()
    inventory = ledger.client.get("/v1/facts", {"predicate": "prefers_theme"}).json()
    assert [f["id"] for f in inventory["facts"]] == [body["id"]]
    recalled = ledger.recall("u", predicate="prefers_theme").json()
    assert [f["id"] for f in recalled["facts"]] == [body["id"]]
    export = ledger.client.get("/v1/subjects/u/export")
    assert export.status_code == 200
    content = b"".join(export.streaming_content).decode()
    assert body["id"] in content
    assert "client:x" in content
    assert AuditEvent.objects.filter(operation="fact.author", object_ids=[body["id"]]).exists()


def test_rebuilds_leave_client_facts_alone(ledger, django_capture_on_commit_callbacks):
    declare(ledger)
    ledger.ingest("u", ("m1", "I live in Lisbon. Theme: dark.", T1))
    body = record(ledger, evidence=[quote("m1", "dark")], extracted_by="x").json()
    version = FactVersion.objects.get(fact_id=body["id"])
    response = ledger.client.post(
        "/v1/rebuilds", {"scope": "source", "subject": "u", "message_id": "m1"}, format="json"
    )
    assert response.status_code in (200, 201, 202), response.json()
    # The extracted fact of the same message was read again; the client's was not.
    lisbon = FactVersion.objects.filter(predicate="lives_in")
    assert lisbon.filter(status="reinterpreted").count() == 1
    assert FactVersion.objects.get(fact_id=body["id"]) == version
    assert version.known_until is None
    after = ledger.resolve(body["id"]).json()
    assert after["status"] == "current"
    assert after["evidence"] == body["evidence"]
