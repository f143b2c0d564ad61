"""Web evidence: a quote verified through the API becomes a fact that resolves with its receipt."""

# The page and Crossref servers are the verification tests' fixtures, imported by name.
# ruff: noqa: F811

from __future__ import annotations

import base64
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import lxml.html
import pytest
from django.urls import reverse

from citations.models import AuditEvent, Evidence, Fact, WebSource
from receipts import selectors, services
from receipts.keyring import ensure_key
from tests.citations.openapi import assert_matches_schema
from tests.citations.scan import columns_holding
from tests.receipts.samples import issue_sample
from tests.receipts.test_merkle import ref_leaf, ref_verify_inclusion
from tests.verification.conftest import _page_server, page, pages  # noqa: F401
from tests.verification.crossref.conftest import _crossref_server, crossref  # noqa: F401
from tests.verification.crossref.works import RETRACTED
from verification.pipeline.samples import SAMPLE_QUOTES

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
ARTICLE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>Committee report</title>"
    "{meta}</head><body><article><h1>Committee report</h1>"
    "<p>The committee said it was deeply concerned about the results of the study.</p>"
    "<p>It recommended a review of every programme before 2027.</p></article></body></html>"
)
QUOTE = "deeply concerned about the results of the study"
SECOND = "a review of every programme before 2027"


@pytest.fixture
def article(pages):
    pages.routes["/report"] = page(ARTICLE.format(meta=""))
    return pages.url("/report")


def verify(api, url: str, quote: str = QUOTE) -> dict:
    response = api.post("/v1/verify/quote", {"url": url, "quote": quote}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def record(ledger, *evidence: dict, **body):
    payload = {
        "subject": "committee",
        "predicate": "likes",
        "statement": "The committee is deeply concerned about the study's results.",
        "evidence": list(evidence),
        **body,
    }
    return ledger.client.post("/v1/facts", payload, format="json")


def web_rows(body: dict) -> list[dict]:
    return [row for row in body["evidence"] if row["source"] == "web"]


def refusal(response) -> tuple[str, str]:
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    return error["details"]["field"], error["details"]["reason"]


def test_a_verified_quote_becomes_a_fact_whose_resolve_carries_a_receipt_that_checks_offline(
    api, ledger, article, tmp_path
):
    answer = verify(api, article)
    response = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE})
    assert response.status_code == 201, response.json()
    body = response.json()
    authored, web = body["evidence"]
    assert authored["source"] == "authored"
    assert authored["quote"] == body["statement"]
    assert web["source"] == "web"
    assert web["quote"] == QUOTE
    assert web["url"] == article
    assert web["match"] == "exact"
    assert (web["start"], web["end"]) == (answer["result"]["start"], answer["result"]["end"])
    assert web["normalised_sha256"] == answer["result"]["normalised_sha256"]
    assert web["receipt"] == answer["receipt"]
    assert web["retrieved_at"].endswith("Z")
    assert web["source_retracted"] is False
    assert "byte_start" not in web and "context" not in web
    # Without authored_by the credential's actor wrote the record, on both rows.
    assert authored["authored_by"] == web["authored_by"] != ""
    resolved = ledger.resolve(body["id"])
    assert resolved.status_code == 200
    assert resolved.json() == body

    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(selectors.public_jwks()), encoding="utf-8")
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "receipts.check",
            web["receipt"],
            "--jwks",
            str(jwks),
            "--quote",
            web["quote"],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_web_evidence_names_its_receipts_leaf_and_the_logs_proof_verifies_for_it(
    api, ledger, article
):
    answer = verify(api, article)
    for i in range(4):  # later leaves: the receipt's is not simply the last one
        issue_sample(quote=f"a later receipt {i}")
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    (web,) = web_rows(body)
    assert web["receipt_log_index"] == answer["receipt_log_index"]
    assert web_rows(ledger.resolve(body["id"]).json()) == [web]
    # The index is that receipt's leaf: its inclusion proof verifies by RFC 9162 (the
    # tests' own implementation) for the receipt's bytes, and for no other leaf's.
    head = api.get("/v1/log/head").json()
    index, size = web["receipt_log_index"], head["tree_size"]
    assert index < size - 4
    proof = api.get(f"/v1/log/proof?index={index}&tree_size={size}").json()
    path = [base64.b64decode(node) for node in proof["audit_path"]]
    root = base64.b64decode(head["root_hash"])
    receipt = web["receipt"].encode("ascii")
    assert ref_verify_inclusion(index, size, ref_leaf(receipt), path, root)
    assert not ref_verify_inclusion(index + 1, size, ref_leaf(receipt), path, root)


def test_the_audit_entry_names_the_fact_and_counts_sources_without_the_quote(api, ledger, article):
    answer = verify(api, article)
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    event = AuditEvent.objects.get(operation="fact.author")
    assert event.object_ids == [body["id"]]
    assert event.source_count == 2
    ledger.resolve(body["id"])
    stored = [
        json.dumps([e.operation, e.actor, e.object_ids, e.request_id, e.outcome])
        for e in AuditEvent.objects.all()
    ]
    assert not any("deeply concerned" in line for line in stored)
    assert not any(answer["receipt"][:40] in line for line in stored)


def test_a_batch_receipt_admits_the_quote_its_index_picks(api, ledger, article):
    response = api.post(
        "/v1/verify/quotes", {"url": article, "quotes": [QUOTE, SECOND]}, format="json"
    )
    assert response.status_code == 200, response.json()
    receipt = response.json()["receipt"]
    wrong = record(ledger, {"receipt": receipt, "quote": SECOND, "index": 0})
    assert refusal(wrong) == ("evidence[0].quote", "quote_mismatch")
    body = record(ledger, {"receipt": receipt, "quote": SECOND, "index": 1}).json()
    [web] = web_rows(body)
    assert web["quote"] == SECOND
    assert web["receipt_index"] == 1
    assert web["route"] == "verify/quotes"
    assert web["start"] == response.json()["results"][1]["start"]


def test_a_citations_batch_receipt_admits_its_citation(api, ledger, article):
    response = api.post(
        "/v1/verify/citations",
        {"citations": [{"url": article, "quote": SECOND}]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = record(ledger, {"receipt": response.json()["receipt"], "quote": SECOND}).json()
    [web] = web_rows(body)
    assert (web["route"], web["quote"]) == ("verify/citations", SECOND)


def test_a_fetch_receipt_admits_a_quote_found_in_its_signed_text(api, ledger, article):
    fetched = api.post("/v1/fetch", {"url": article}, format="json").json()
    item = {"receipt": fetched["receipt"], "quote": QUOTE, "text": fetched["text"]}
    body = record(ledger, item).json()
    [web] = web_rows(body)
    assert web["route"] == "fetch"
    assert fetched["text"][web["start"] : web["end"]] == QUOTE
    assert ledger.resolve(body["id"]).status_code == 200
    without_text = record(ledger, {"receipt": fetched["receipt"], "quote": QUOTE})
    assert refusal(without_text) == ("evidence[0].text", "receipt_invalid")
    other_text = record(ledger, {**item, "text": fetched["text"] + " more"})
    assert refusal(other_text) == ("evidence[0].text", "receipt_invalid")
    absent = record(ledger, {**item, "quote": "not a word of this is there"})
    assert refusal(absent) == ("evidence[0].quote", "no_match")


def test_an_altered_receipt_is_refused_and_nothing_is_written(api, ledger, article):
    receipt = verify(api, article)["receipt"]
    head, payload, signature = receipt.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    response = record(ledger, {"receipt": f"{head}.{payload}.{flipped}", "quote": QUOTE})
    assert refusal(response) == ("evidence[0].receipt", "receipt_invalid")
    assert not Fact.objects.exists()
    garbage = record(ledger, {"receipt": "not-a-receipt", "quote": QUOTE})
    assert refusal(garbage) == ("evidence[0].receipt", "receipt_invalid")


def test_a_sample_receipt_vouches_for_no_page_of_the_caller(api, ledger):
    sample = api.get("/v1/sample/quote").json()
    assert sample["result"]["match"] == "fuzzy"
    quote = SAMPLE_QUOTES["fuzzy"]
    response = record(ledger, {"receipt": sample["receipt"], "quote": quote})
    assert refusal(response) == ("evidence[0].receipt", "receipt_invalid")


def test_an_index_past_the_receipt_s_results_is_refused(api, ledger, article):
    receipt = verify(api, article)["receipt"]
    response = record(ledger, {"receipt": receipt, "quote": QUOTE, "index": 1})
    assert refusal(response) == ("evidence[0].index", "receipt_invalid")


def test_another_quote_than_the_signed_one_is_a_quote_mismatch(api, ledger, article):
    receipt = verify(api, article)["receipt"]
    response = record(ledger, {"receipt": receipt, "quote": QUOTE + "."})
    assert refusal(response) == ("evidence[0].quote", "quote_mismatch")


def test_a_quote_the_page_does_not_hold_is_no_match(api, ledger, article):
    quote = "the committee praised the study without reservation"
    answer = verify(api, article, quote)
    assert answer["result"]["match"] == "none"
    response = record(ledger, {"receipt": answer["receipt"], "quote": quote})
    assert refusal(response) == ("evidence[0].index", "no_match")


def test_a_quote_on_an_error_page_is_page_not_real(api, ledger, pages):
    pages.routes["/gone"] = page(ARTICLE.format(meta=""), status=404)
    answer = verify(api, pages.url("/gone"))
    assert answer["page"]["content_kind"] == "http_error"
    assert answer["result"]["match"] == "exact"
    response = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE})
    assert refusal(response) == ("evidence[0].receipt", "page_not_real")


def test_the_second_bad_piece_is_named_by_its_position(api, ledger, article):
    receipt = verify(api, article)["receipt"]
    good = {"receipt": receipt, "quote": QUOTE}
    response = record(ledger, good, {"receipt": receipt, "quote": "other"})
    assert refusal(response) == ("evidence[1].quote", "quote_mismatch")


def test_without_evidence_an_authored_record_still_needs_its_author(ledger):
    response = record(ledger)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "authored_by"


def test_a_receipt_signed_by_a_rotated_out_key_still_admits(
    api, ledger, article, tmp_path, settings
):
    directory = tmp_path / "keys"
    ensure_key(str(directory), now=datetime.now(UTC))
    settings.ATTEST_SIGNING_KEYS = str(directory)
    answer = verify(api, article)
    before = answer["receipt"]
    active, _ = services.signing_key_rotate()
    check = services.verify_receipt(receipt=before)
    assert check.valid and check.kid != active.kid and check.key_state != "active"
    response = record(ledger, {"receipt": before, "quote": QUOTE})
    assert response.status_code == 201, response.json()
    assert ledger.resolve(response.json()["id"]).status_code == 200


def test_an_altered_stored_receipt_makes_resolve_answer_500_without_evidence(api, ledger, article):
    answer = verify(api, article)
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    head, payload, signature = answer["receipt"].split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    WebSource.objects.update(receipt=f"{head}.{payload}.{flipped}")
    response = ledger.resolve(body["id"])
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "evidence_mismatch"
    assert "evidence" not in response.json()


def test_an_altered_stored_quote_makes_resolve_answer_500(api, ledger, article):
    answer = verify(api, article)
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    WebSource.objects.update(quote=QUOTE.replace("deeply", "mildly"))
    response = ledger.resolve(body["id"])
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "evidence_mismatch"


def test_a_later_crossref_lookup_that_finds_the_paper_retracted_shows_on_resolve(
    api,
    ledger,
    pages,
    settings,
    crossref,
):
    pages.routes["/paper"] = page(
        ARTICLE.format(meta=f"<meta name='citation_doi' content='{RETRACTED}'>")
    )
    url = pages.url("/paper")
    settings.ATTEST_CROSSREF_URL = ""  # verified while DOI lookups were off
    answer = verify(api, url)
    assert answer["page"]["doi"].lower() == RETRACTED.lower()
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    [web] = web_rows(body)
    assert web["doi"].lower() == RETRACTED.lower()
    assert web["source_retracted"] is False
    # Another caller verifies on the same paper later, and Crossref now answers.
    settings.ATTEST_CROSSREF_URL = crossref.url
    later = verify(api, url, SECOND)
    assert later["page"]["crossref"]["retracted"] is True
    [web] = web_rows(ledger.resolve(body["id"]).json())
    assert web["source_retracted"] is True
    assert web["doi_status"] == ""  # the signed status stays what was signed


def test_recall_inventory_and_export_carry_web_evidence(api, ledger, article):
    answer = verify(api, article)
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    recalled = ledger.recall("committee").json()["facts"]
    assert [fact["id"] for fact in recalled] == [body["id"]]
    listed = ledger.client.get("/v1/facts?subject=committee").json()["facts"]
    assert [fact["id"] for fact in listed] == [body["id"]]
    export = ledger.client.get("/v1/subjects/committee/export")
    lines = [json.loads(line) for line in b"".join(export.streaming_content).splitlines()]
    evidence = [line for line in lines if line["type"] == "evidence"]
    assert [line["source"] for line in evidence] == ["authored", "web"]
    web = evidence[1]
    assert (web["quote"], web["url"], web["receipt"]) == (QUOTE, article, answer["receipt"])
    assert lines[-1]["type"] == "end"


def test_erasing_the_subject_removes_the_web_quote_and_receipt_from_every_table(
    api, ledger, article
):
    answer = verify(api, article)
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    signature = answer["receipt"].split(".")[2]
    assert set(columns_holding(QUOTE, signature)) >= {
        "citations_websource.quote",
        "citations_websource.receipt",
    }
    erased = ledger.client.post("/v1/erasures", {"subject": "committee"}, format="json")
    assert erased.status_code == 200
    assert not WebSource.objects.exists()
    assert not Evidence.objects.filter(kind="web").exists()
    assert columns_holding(QUOTE, signature) == []
    assert ledger.resolve(body["id"]).status_code == 404


def test_a_web_backed_record_and_its_resolve_match_the_schema(api, ledger, article):
    schema = api.get("/v1/openapi.json").json()
    answer = verify(api, article)
    created = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE})
    assert created.status_code == 201
    assert_matches_schema(schema, "/v1/facts", "post", created)
    resolved = ledger.resolve(created.json()["id"])
    assert_matches_schema(schema, "/v1/citations/resolve", "post", resolved)
    refused = record(ledger, {"receipt": answer["receipt"], "quote": "other"})
    assert refused.status_code == 400
    assert_matches_schema(schema, "/v1/facts", "post", refused)


def recorded(ledger, predicate: str, value: str, start: str, *evidence: dict) -> dict:
    """An authored record of ``predicate`` = ``value`` from ``start``: its answer, checked 201."""
    statement = {"works_at": "Works at", "lives_in": "Lives in"}[predicate]
    response = record(
        ledger,
        *evidence,
        predicate=predicate,
        value=value,
        statement=f"{statement} {value}.",
        valid_from=start,
        authored_by="desk:kim",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_web_row_moved_by_a_merge_keeps_its_quote_and_receipt(api, ledger, article):
    answer = verify(api, article)
    first = recorded(ledger, "works_at", "Acme", "2026-01-01T00:00:00Z")
    between = recorded(ledger, "works_at", "Globex", "2026-02-01T00:00:00Z")
    again = recorded(
        ledger,
        "works_at",
        "Acme",
        "2026-03-01T00:00:00Z",
        {"receipt": answer["receipt"], "quote": QUOTE},
    )
    assert again["id"] != first["id"]
    # Withdrawing Globex makes the two Acme facts one again: the later one's sources move.
    retracted = ledger.client.post(
        f"/v1/facts/{between['id']}/retract", {"reason": "never worked there"}, format="json"
    )
    assert retracted.status_code == 200, retracted.json()
    merged = ledger.resolve(first["id"]).json()
    [web] = web_rows(merged)
    assert (web["quote"], web["receipt"]) == (QUOTE, answer["receipt"])
    assert WebSource.objects.count() == 2  # the closed row keeps its own copy


def test_a_web_row_split_off_by_a_late_value_keeps_its_quote_and_receipt(api, ledger, article):
    """A value that starts between two statements of a fact splits the later one off."""
    answer = verify(api, article)
    first = recorded(ledger, "lives_in", "Paris", "2026-01-01T00:00:00Z")
    again = recorded(
        ledger,
        "lives_in",
        "Paris",
        "2026-03-01T00:00:00Z",
        {"receipt": answer["receipt"], "quote": QUOTE},
    )
    assert again["id"] == first["id"]  # a restatement: more evidence on the same fact
    recorded(ledger, "lives_in", "Berlin", "2026-02-01T00:00:00Z")
    split = ledger.resolve(first["id"]).json()
    assert web_rows(split) == []  # the early fact keeps only the statement before the cut
    [later] = [
        fact
        for fact in ledger.client.get("/v1/facts?subject=committee&predicate=lives_in").json()[
            "facts"
        ]
        if fact["id"] not in (first["id"],) and fact["value"] == "Paris"
    ]
    [web] = web_rows(ledger.resolve(later["id"]).json())
    assert (web["quote"], web["receipt"]) == (QUOTE, answer["receipt"])
    assert WebSource.objects.count() == 2  # the closed row keeps its own copy


def test_staff_see_a_web_row_with_its_quote_and_page(
    api, ledger, article, client, django_user_model
):
    answer = verify(api, article)
    record(ledger, {"receipt": answer["receipt"], "quote": QUOTE})
    staff = django_user_model.objects.create_superuser("staff", "staff@example.org", "pw")
    client.force_login(staff)
    web = Evidence.objects.get(kind="web")
    page_html = client.get(reverse("admin:citations_evidence_change", args=[web.pk]))
    assert page_html.status_code == 200
    text = lxml.html.fromstring(page_html.content.decode()).text_content()
    assert QUOTE in text and article in text
    listed = client.get(reverse("admin:citations_evidence_changelist") + "?kind__exact=web")
    assert QUOTE in listed.content.decode()


def test_erasing_the_record_s_message_takes_its_web_evidence(api, ledger, article):
    answer = verify(api, article)
    body = record(ledger, {"receipt": answer["receipt"], "quote": QUOTE}).json()
    message_id = body["evidence"][0]["source_message_id"]
    assert message_id.startswith("authored:")
    erased = ledger.client.post(
        "/v1/erasures", {"subject": "committee", "message_id": message_id}, format="json"
    )
    assert erased.json() == {"erased": {"observations": 1, "facts": 1}}
    assert not WebSource.objects.exists()
    assert columns_holding(QUOTE) == []
    assert ledger.resolve(body["id"]).status_code == 404
