"""Crossref in the answers, through the real API: pages with a DOI on loopback, a local
Crossref speaking its real envelope, payments signed for real, receipts checked."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from attest_core.checks import check_offline
from billing.models import LocalTransfer
from receipts import selectors
from tests.billing.conftest import Payer, decode_offer
from tests.redis_outage import redis_down
from tests.verification.conftest import page, send
from tests.verification.crossref import works
from verification.crossref.lookups import crossref_for_pages
from verification.models import CrossrefLookup

pytestmark = pytest.mark.django_db

CITATIONS_PRICE = "100000"  # US$0.10 in USDC's atomic units


@pytest.fixture(autouse=True)
def paid_only(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"


def paper(doi: str | None, words: str = "The results held across every sample we took.") -> str:
    meta = f'<meta name="citation_doi" content="doi:{doi}">' if doi else ""
    return (
        f"<html><head><title>A paper</title>{meta}</head>"
        f"<body><p>{words}</p><p>Methods are described below.</p></body></html>"
    )


@pytest.fixture
def papers(pages, crossref):
    """One page per test work (its DOI in a citation_doi meta tag) and one without a DOI."""
    doi_of = {
        "retracted": works.RETRACTED,
        "corrected": works.CORRECTED,
        "concern": works.CONCERN,
        "notice": works.RETRACTION_NOTICE,
        "clean": works.CLEAN,
        "unknown": works.UNKNOWN,
        "plain": None,
    }
    for name, doi in doi_of.items():
        pages.routes[f"/{name}"] = page(paper(doi))
    return {name: pages.url(f"/{name}") for name in doi_of}


def _post(api, route: str, body: dict, *, pay: bool = True):
    response = api.post(route, body, format="json")
    if response.status_code != 402 or not pay:
        return response
    payment = Payer().pay(decode_offer(response))
    return api.post(route, body, format="json", HTTP_PAYMENT_SIGNATURE=payment)


def _cite(*urls: str) -> dict:
    return {"citations": [{"url": url, "quote": "The results held"} for url in urls]}


def _claims(answer: dict) -> dict:
    """The receipt's claims as POST /v1/receipt/verify reads them (it must find it valid)."""
    checked = APIClient().post("/v1/receipt/verify", {"receipt": answer["receipt"]}, format="json")
    assert checked.status_code == 200 and checked.json()["valid"], checked.content
    return checked.json()["claims"]


def _checker_findings(answer: dict) -> list[str]:
    report = check_offline(
        answer["receipt"], public_keys=selectors.signing_keyring().public_keys(), answer=answer
    )
    return [f.message for f in report.failures]


# --- what each work looks like in a citations answer --------------------------------------


def test_every_kind_of_work_is_reported_in_pages_summary_and_receipt(api, papers, crossref):
    urls = [papers[name] for name in papers]
    body = _cite(*urls, papers["retracted"])  # two citations on the retracted paper
    response = _post(api, "/v1/verify/citations", body)
    assert response.status_code == 200, response.content
    answer = response.json()
    blocks = {name: answer["pages"][i].get("crossref") for i, name in enumerate(papers)}

    retracted = blocks["retracted"]
    assert (retracted["status"], retracted["reason"], retracted["retracted"]) == (
        "found",
        None,
        True,
    )
    assert (retracted["doi"], retracted["doi_source"]) == (works.RETRACTED, "page")
    assert retracted["title"].startswith("RETRACTED:")
    assert len(retracted["authors"]) == 10 and retracted["authors_total"] == 12
    assert {u["type"] for u in retracted["updates"]} == {"retraction", "correction"}
    assert retracted["update_to"] is None

    assert blocks["corrected"]["retracted"] is False
    assert [u["type"] for u in blocks["corrected"]["updates"]] == ["correction"]
    assert blocks["concern"]["retracted"] is False
    assert [u["type"] for u in blocks["concern"]["updates"]] == ["expression_of_concern"]
    notice = blocks["notice"]
    assert (notice["status"], notice["retracted"], notice["updates"]) == ("found", False, [])
    assert {(u["type"], u["doi"]) for u in notice["update_to"]} == {("retraction", works.RETRACTED)}
    assert (blocks["clean"]["status"], blocks["clean"]["retracted"]) == ("found", False)
    assert blocks["clean"]["updates"] == []
    assert blocks["unknown"] == {
        "doi": works.UNKNOWN,
        "doi_source": "page",
        "status": "not_found",
        "reason": None,
        "retracted": None,
    }
    assert blocks["plain"] is None and answer["pages"][6]["doi"] is None

    # Two citations sit on the retracted paper; every lookup was made.
    assert answer["summary"]["retracted"] == 2
    assert answer["summary"]["doi_unchecked"] == 0
    signed = _claims(answer)["pages"]
    assert [(p["doi"], p["doi_status"], p["retracted"]) for p in signed] == [
        (works.RETRACTED, "found", True),
        (works.CORRECTED, "found", False),
        (works.CONCERN, "found", False),
        (works.RETRACTION_NOTICE, "found", False),
        (works.CLEAN, "found", False),
        (works.UNKNOWN, "not_found", None),
        (None, None, None),
    ]
    assert _checker_findings(answer) == []
    assert [t.value for t in LocalTransfer.objects.all()] == [CITATIONS_PRICE]


def test_a_retracted_paper_cited_by_a_publisher_view_url_is_warned_about(api, pages, crossref):
    """No meta tag: the DOI comes from the URL path, without the view the publisher appends."""
    views = ["/view.html", "/full", "/epdf", ".pdf"]
    for view in views:
        pages.routes[f"/doi/{works.RETRACTED}{view}"] = page(paper(None))
    urls = [pages.url(f"/doi/{works.RETRACTED}{view}") for view in views]
    response = _post(api, "/v1/verify/citations", _cite(*urls))
    assert response.status_code == 200, response.content
    answer = response.json()
    for entry in answer["pages"]:
        block = entry["crossref"]
        assert (block["doi"], block["doi_source"]) == (works.RETRACTED, "url")
        assert (block["status"], block["retracted"]) == ("found", True)
    assert (answer["summary"]["retracted"], answer["summary"]["doi_unchecked"]) == (4, 0)
    signed = _claims(answer)["pages"]
    assert {(p["doi"], p["retracted"]) for p in signed} == {(works.RETRACTED, True)}
    # Four URLs, one DOI: one lookup of the minute budget.
    assert CrossrefLookup.objects.filter(doi=works.RETRACTED).count() == 1


def test_an_answer_hiding_a_retraction_fails_the_receipt_check(api, papers):
    answer = _post(api, "/v1/verify/citations", _cite(papers["retracted"])).json()
    hidden = {**answer, "pages": [{**answer["pages"][0]}]}
    hidden["pages"][0]["crossref"] = {**answer["pages"][0]["crossref"], "retracted": False}
    findings = _checker_findings(hidden)
    assert any("crossref: retracted is False but the receipt signs True" in f for f in findings)
    del hidden["pages"][0]["crossref"]
    findings = _checker_findings(hidden)
    assert any("shows no crossref block" in f for f in findings), findings


# --- skipped lookups: reported, counted as unchecked, never failing or changing the charge ----


def _skipped_answer(api, papers, crossref) -> dict:
    response = _post(api, "/v1/verify/citations", _cite(papers["retracted"], papers["plain"]))
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    ("trouble", "reason"),
    [
        ("timeout", "timeout"),
        ("429", "rate_limited"),
        ("500", "unavailable"),
    ],
)
def test_a_skipped_lookup_is_reported_unchecked_and_charged_as_usual(
    api, papers, crossref, settings, trouble, reason
):
    if trouble == "timeout":
        settings.ATTEST_CROSSREF_TIMEOUT = 0.3
        crossref.delay = 1.0
    elif trouble == "429":
        crossref.refuse_with_429({"Retry-After": "30"})
    else:
        crossref.refuse_with_500()
    answer = _skipped_answer(api, papers, crossref)
    block = answer["pages"][0]["crossref"]
    assert (block["status"], block["reason"], block["retracted"]) == ("skipped", reason, None)
    assert "title" not in block
    assert answer["summary"]["retracted"] == 0
    assert answer["summary"]["doi_unchecked"] == 1
    assert [r["match"] for r in answer["results"]] == ["exact", "exact"]
    assert _claims(answer)["pages"][0]["doi_status"] == "skipped"
    assert _claims(answer)["pages"][0]["retracted"] is None
    assert _checker_findings(answer) == []
    # The same charge as a batch whose lookup was made: one transfer at the route's price.
    assert [t.value for t in LocalTransfer.objects.all()] == [CITATIONS_PRICE]
    assert CrossrefLookup.objects.get().reason == reason


def test_a_cache_outage_skips_the_lookup_as_unavailable_and_the_paid_call_goes_on(api, papers):
    # verify/quote goes on through a cache outage for a payer (a batch cannot: its limits
    # count in the cache); the Crossref turn lives there too, so no lookup is paced or made.
    body = {"url": papers["retracted"], "quote": "The results held"}
    payment = Payer().pay(decode_offer(_post(api, "/v1/verify/quote", body, pay=False)))
    with redis_down():
        response = api.post("/v1/verify/quote", body, format="json", HTTP_PAYMENT_SIGNATURE=payment)
    assert response.status_code == 200, response.content
    block = response.json()["page"]["crossref"]
    assert (block["status"], block["reason"]) == ("skipped", "unavailable")
    assert _claims(response.json())["pages"][0]["doi_status"] == "skipped"


# --- the two budgets ------------------------------------------------------------------------


def test_trial_calls_spend_their_own_six_lookups_and_paid_calls_keep_theirs(
    api, pages, crossref, settings
):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 10
    crossref.generated_prefix = "10.5555/bulk."
    for i in range(9):
        pages.routes[f"/t{i}"] = page(paper(f"10.5555/bulk.t{i}"))
    statuses = []
    for batch in range(3):  # a trial covers at most 3 citations
        response = _post(
            api, "/v1/verify/citations", _cite(*[pages.url(f"/t{batch * 3 + i}") for i in range(3)])
        )
        assert response.json()["tier"] == "trial", response.content
        statuses += [
            (p["crossref"]["status"], p["crossref"]["reason"]) for p in response.json()["pages"]
        ]
        last = response.json()
    assert statuses == [("found", None)] * 6 + [("skipped", "rate_limited")] * 3
    assert last["summary"]["doi_unchecked"] == 3
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    pages.routes["/p"] = page(paper("10.5555/bulk.paid"))
    paid = _post(api, "/v1/verify/citations", _cite(pages.url("/p"))).json()
    assert paid["tier"] == "paid"
    assert paid["pages"][0]["crossref"]["status"] == "found"


def test_a_spent_paid_budget_skips_paid_lookups_and_leaves_the_trial_budget(
    api, pages, crossref, settings
):
    crossref.generated_prefix = "10.5555/bulk."
    crossref.limit, crossref.interval = "10000", "1s"
    spent = crossref_for_pages([f"10.5555/bulk.{i}" for i in range(120)], tier="paid")
    assert all(o.status == "found" for o in spent.values())
    pages.routes["/p"] = page(paper("10.5555/bulk.late"))
    paid = _post(api, "/v1/verify/citations", _cite(pages.url("/p"))).json()
    block = paid["pages"][0]["crossref"]
    assert (paid["tier"], block["status"], block["reason"]) == ("paid", "skipped", "rate_limited")
    assert paid["summary"]["doi_unchecked"] == 1
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1
    trial = _post(api, "/v1/verify/citations", _cite(pages.url("/p"))).json()
    assert (trial["tier"], trial["pages"][0]["crossref"]["status"]) == ("trial", "found")


# --- the other routes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v1/verify/quote", {"quote": "The results held"}),
        ("/v1/verify/quotes", {"quotes": ["The results held", "Methods are described"]}),
        ("/v1/fetch", {}),
    ],
)
def test_the_single_page_routes_carry_the_block_and_sign_it(api, papers, route, body):
    response = _post(api, route, {"url": papers["retracted"], **body})
    assert response.status_code == 200, response.content
    answer = response.json()
    block = answer["page"]["crossref"]
    assert (block["doi"], block["status"], block["retracted"]) == (works.RETRACTED, "found", True)
    assert "retracted" not in answer.get("summary", {})
    signed = _claims(answer)["pages"][0]
    assert (signed["doi"], signed["doi_status"], signed["retracted"]) == (
        works.RETRACTED,
        "found",
        True,
    )
    assert _checker_findings(answer) == []


# --- concurrency and lookups off ------------------------------------------------------------


def test_a_doi_org_link_is_looked_up_while_its_page_is_fetched(api, pages, crossref, dns_server):
    # The page answers only once Crossref has been asked about its DOI: a lookup made
    # after the fetch would leave it waiting out its five seconds.
    dns_server.answers["doi.org"] = "127.0.0.1"
    seen_first = []

    def slow_paper(handler) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not crossref.work_paths():
            time.sleep(0.01)
        seen_first.append(bool(crossref.work_paths()))
        send(handler, 200, paper(None).encode())

    pages.routes[f"/{works.CLEAN}"] = slow_paper
    url = f"http://doi.org:{pages.port}/{works.CLEAN}"
    answer = _post(api, "/v1/verify/citations", _cite(url)).json()
    assert seen_first == [True]
    block = answer["pages"][0]["crossref"]
    assert (block["doi"], block["doi_source"], block["status"]) == (works.CLEAN, "url", "found")
    assert len(crossref.work_paths()) == 1


def test_with_lookups_off_pages_keep_their_doi_and_nothing_claims_a_check(
    api, papers, crossref, settings
):
    settings.ATTEST_CROSSREF_URL = ""
    answer = _post(api, "/v1/verify/citations", _cite(papers["retracted"])).json()
    assert answer["pages"][0]["doi"] == works.RETRACTED
    assert "crossref" not in answer["pages"][0]
    assert set(answer["summary"]) == {"exact", "fuzzy", "none", "failed"}
    signed = _claims(answer)["pages"][0]
    assert (signed["doi"], signed["doi_status"], signed["retracted"]) == (
        works.RETRACTED,
        None,
        None,
    )
    assert crossref.seen == []


def test_the_free_sample_never_asks_crossref_and_counts_nothing_unchecked(api, crossref):
    answer = api.get("/v1/sample/citations").json()
    assert (answer["summary"]["retracted"], answer["summary"]["doi_unchecked"]) == (0, 0)
    assert crossref.seen == []


# --- the published schema ------------------------------------------------------------------


def _strict(node):
    """The OpenAPI 3.0 schema as JSON Schema: nullable as a null type, no undeclared fields."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _strict(v) for k, v in node.items()}
    if node.pop("nullable", False):
        node = {"anyOf": [node, {"type": "null"}]}
    elif "properties" in node:
        node.setdefault("additionalProperties", False)
    return node


def test_a_citations_answer_with_crossref_blocks_is_what_the_schema_says(api, papers, crossref):
    import jsonschema

    schema = api.get("/v1/openapi.json").json()
    body = _cite(papers["retracted"], papers["notice"], papers["unknown"], papers["plain"])
    answer = _post(api, "/v1/verify/citations", body).json()
    strict = {"$ref": "#/components/schemas/VerifyCitationsOutput", **_strict(schema)}
    jsonschema.validate(answer, strict)
    crossref.refuse_with_500()
    body = {"url": papers["corrected"], "quote": "The results"}
    skipped = _post(api, "/v1/verify/quote", body).json()
    assert skipped["page"]["crossref"]["status"] == "skipped"
    jsonschema.validate(
        skipped, {"$ref": "#/components/schemas/VerifyQuoteOutput", **_strict(schema)}
    )
    summary = schema["components"]["schemas"]["CitationsSummaryOutput"]["properties"]
    assert {"retracted", "doi_unchecked"} <= set(summary)
