"""Every method of attest_client.Attest against a real Attest on loopback: answers in the
shape attest_client.types gives them, payment through the x402 SDK, refusals as AttestError,
and a paid answer lost on the way back fetched again without a second charge."""

from __future__ import annotations

import json

import pytest

from attest_client import Attest, AttestError
from attest_client import types as t
from tests.clients.conftest import QUOTE
from tests.clients.lossy_proxy import LossyProxy

# The first test starts the service (migrations, gunicorn): minutes on a loaded machine.
pytestmark = pytest.mark.timeout(600)


def assert_shape(answer: dict, shape: type) -> None:
    """Every field of the answer is one the TypedDict names, and each it requires is there."""
    assert set(answer) <= shape.__required_keys__ | shape.__optional_keys__, (
        set(answer) - shape.__required_keys__ - shape.__optional_keys__
    )
    assert shape.__required_keys__ <= set(answer)


@pytest.fixture
def paying(service, payer_key):
    with Attest(service.url, payer_key=payer_key) as client:
        yield client


@pytest.fixture
def ledger(service):
    with Attest(service.url, credential=service.credential) as client:
        yield client


def test_verify_quote_is_paid_through_the_sdk_and_its_receipt_checks_offline(service, paying):
    landed = service.facilitator.landed
    answer = paying.verify_quote(service.article, QUOTE, match="exact")
    assert_shape(answer, t.VerifyQuoteAnswer)
    assert answer["tier"] == "paid" and answer["rail"] == "x402"
    assert answer["result"]["match"] == "exact"
    assert service.facilitator.landed == landed + 1

    fetched = paying.fetch(service.article)
    assert_shape(fetched, t.FetchAnswer)
    assert QUOTE in fetched["text"] and fetched["tier"] == "paid"
    report = paying.check_receipt(answer, text=fetched["text"], quote=QUOTE)
    assert report.failures == []
    assert "span_holds_quote" in {f.reason for f in report.findings if f.status == "ok"}

    tampered = {**answer, "result": {**answer["result"], "start": answer["result"]["start"] + 1}}
    assert [f.kind for f in paying.check_receipt(tampered).failures] == ["answer"]


def test_the_batch_routes_are_paid_and_typed(service, paying):
    quotes = paying.verify_quotes(service.article, [QUOTE, "a sentence the page lacks"])
    assert_shape(quotes, t.VerifyQuotesAnswer)
    assert [r["match"] for r in quotes["results"]] == ["exact", "none"]
    assert quotes["tier"] == "paid"
    citations = paying.verify_citations([{"url": service.article, "quote": QUOTE}])
    assert_shape(citations, t.VerifyCitationsAnswer)
    assert citations["results"][0]["match"] == "exact" and citations["tier"] == "paid"


def test_without_a_payer_a_priced_call_raises_the_offer(service):
    with Attest(service.url) as client, pytest.raises(AttestError) as refused:
        client.verify_quote(service.article, QUOTE)
    assert refused.value.status == 402
    assert refused.value.code == "payment_required"
    assert refused.value.details["accepts"], refused.value.details
    assert "PAYMENT-REQUIRED" in {name.upper() for name in refused.value.headers}


def test_a_refused_call_is_not_charged(service, paying):
    landed = service.facilitator.landed
    with pytest.raises(AttestError) as refused:
        paying.verify_quote(service.pages.url("/private/page"), QUOTE)
    assert (refused.value.status, refused.value.code) == (403, "robots_disallowed")
    assert refused.value.message
    with pytest.raises(AttestError) as invalid:
        paying.verify_quote(service.article, QUOTE, threshold=3)
    assert (invalid.value.status, invalid.value.code) == (400, "invalid_request")
    assert service.facilitator.landed == landed


def test_a_lost_paid_answer_is_fetched_again_with_the_same_payment(service, payer_key):
    with LossyProxy(service.url) as proxy, Attest(proxy.url, payer_key=payer_key) as client:
        landed = service.facilitator.landed
        proxy.lose_paid_answers = 1
        answer = client.verify_quote(service.article, QUOTE)
        assert proxy.lost == [200]  # the server answered, and the answer never arrived
    assert len(proxy.payments) == 2 and proxy.payments[0] == proxy.payments[1]
    assert answer["tier"] == "paid" and answer["result"]["match"] == "exact"
    assert service.facilitator.landed == landed + 1  # charged once, answered twice


def test_a_payer_key_that_is_not_a_key_is_refused_before_any_call(service):
    with pytest.raises(AttestError) as refused:
        Attest(service.url, payer_key="not-hex")
    assert refused.value.code == "payment" and refused.value.status is None


def test_an_unreachable_service_raises_a_transport_error(service):
    from tests.live_service import free_port

    with Attest(f"http://127.0.0.1:{free_port()}") as client, pytest.raises(AttestError) as lost:
        client.jwks()
    assert lost.value.code == "transport" and lost.value.status is None


def test_the_free_routes(service):
    with Attest(service.url) as client:
        jwks = client.jwks()
        assert_shape(jwks, t.Jwks)
        assert jwks["keys"][0]["kty"] == "OKP"
        sample = client.sample_quote()
        assert_shape(sample, t.VerifyQuoteAnswer)
        assert sample["tier"] == "sample"
        assert client.check_receipt(sample, jwks=jwks).failures == []
        batch = client.sample_citations()
        assert_shape(batch, t.VerifyCitationsAnswer)
        assert batch["tier"] == "sample"
        assert "<html" in client.sample_page().lower()
        assert "<html" in client.sample_page(missing=True).lower()
        verified = client.receipt_verify(sample["receipt"])
        assert_shape(verified, t.ReceiptVerifyAnswer)
        assert verified["valid"] is True and verified["kid"] == jwks["keys"][0]["kid"]
        broken = client.receipt_verify(sample["receipt"][:-4] + "AAAA")
        assert broken["valid"] is False
        assert client.health()["status"] in ("ok", "degraded")
        assert "/v1/verify/quote" in client.openapi()["paths"]


def test_the_log_methods_prove_a_sample_receipt_in_the_log(service):
    import base64

    from attest_core.check_jwks import jwks_public_keys
    from attest_core.check_log import heads_consistent
    from attest_core.merkle import leaf_hash, verify_inclusion
    from attest_core.tree_head import check_tree_head

    with Attest(service.url) as client:
        client.sample_quote()  # so the first head is not the empty tree's
        first = check_tree_head(client.log_head(), public_keys=jwks_public_keys(client.jwks()))
        sample = client.sample_quote()
        raw_head = client.log_head()
        assert_shape(raw_head, t.TreeHead)
        head = check_tree_head(raw_head, public_keys=jwks_public_keys(client.jwks()))
        proof = client.log_proof(sample["receipt_log_index"], head.tree_size)
        assert_shape(proof, t.InclusionProof)
        path = [base64.b64decode(value) for value in proof["audit_path"]]
        leaf = leaf_hash(sample["receipt"].encode())
        assert verify_inclusion(leaf, proof["leaf_index"], head.tree_size, path, head.root_hash)
        assert 0 < first.tree_size < head.tree_size
        consistency = client.log_consistency(first.tree_size, head.tree_size)
        assert_shape(consistency, t.ConsistencyProof)
        assert heads_consistent(first, head, consistency["proof"])
        with pytest.raises(AttestError) as refused:
            client.log_proof(0, head.tree_size + 1000)
        assert (refused.value.code, refused.value.status) == ("invalid_request", 400)


def test_every_route_has_a_method(service):
    """A route the service adds without a client method fails here."""
    with Attest(service.url) as client:
        paths = set(client.openapi()["paths"])
    covered = {
        "/v1/verify/quote", "/v1/verify/quotes", "/v1/verify/citations", "/v1/fetch",
        "/v1/sample/page", "/v1/sample/missing", "/v1/sample/quote", "/v1/sample/citations",
        "/.well-known/jwks.json", "/v1/receipt/verify", "/v1/observations", "/v1/recall",
        "/v1/facts", "/v1/facts/{fact_id}/retract", "/v1/citations/resolve", "/v1/rebuilds",
        "/v1/rebuilds/{generation_id}", "/v1/erasures", "/v1/subjects/{subject}/export",
        "/healthz", "/v1/openapi.json", "/v1/predicates", "/v1/log/head", "/v1/log/proof",
        "/v1/log/consistency", "/v1/changes", "/v1/subjects", "/v1/credits",
        "/mcp",  # the MCP endpoint: `attest mcp` forwards to it, as an MCP host's stdio
    }  # fmt: skip
    assert paths <= covered, paths - covered


def test_the_ledger(service, ledger):
    message = {
        "id": "client-m1",
        "role": "user",
        "text": "I moved to Dublin in March.",
        "occurred_at": "2026-03-04T10:11:58Z",
    }
    ingested = ledger.ingest("client-u", [message])
    assert_shape(ingested, t.ObservationsAnswer)
    assert ingested["facts"], ingested
    fact_id = ingested["facts"][0]["id"]

    recalled = ledger.recall("client-u")
    assert_shape(recalled, t.FactPage)
    assert fact_id in [fact["id"] for fact in recalled["facts"]]
    for fact in recalled["facts"]:
        assert_shape(fact, t.Fact)
    resolved = ledger.resolve(fact_id)
    assert_shape(resolved, t.Fact)
    assert resolved["evidence"][0]["source_message_id"] == "client-m1"
    listed = ledger.facts(subject="client-u", limit=10)
    assert_shape(listed, t.FactPage)
    assert fact_id in [fact["id"] for fact in listed["facts"]]

    recorded = ledger.record_fact(
        "client-u",
        "lives_in",
        "Lives in Cork since June.",
        value="Cork",
        authored_by="support:ana",
        valid_from="2026-06-01T00:00:00Z",
    )
    assert_shape(recorded, t.Fact)
    assert recorded["value"] == "Cork" and recorded["status"] == "current"
    retracted = ledger.retract(recorded["id"], "Entered for the wrong person.")
    assert_shape(retracted, t.Fact)
    assert retracted["status"] == "retracted"

    rebuilt = ledger.rebuild(subject="client-u", message_id="client-m1")
    assert_shape(rebuilt, t.Rebuild)
    status = ledger.rebuild_status(rebuilt["generation"]["id"])
    assert status["generation"]["id"] == rebuilt["generation"]["id"]
    with pytest.raises(ValueError):
        ledger.rebuild()

    lines = list(ledger.export("client-u"))
    assert lines[0]["type"] == "subject" and lines[-1]["type"] == "end"
    assert "observation" in {line["type"] for line in lines}

    erased = ledger.erase("client-u", "client-m1")
    assert_shape(erased, t.Erasure)
    assert erased["erased"]["observations"] == 1
    with pytest.raises(AttestError) as gone:
        ledger.resolve(fact_id)
    assert (gone.value.status, gone.value.code) == (404, "not_found")
    assert_shape(ledger.erase("client-u"), t.Erasure)
    with pytest.raises(AttestError) as unknown:
        list(ledger.export("client-u"))
    assert unknown.value.status == 404


def test_the_ledger_refuses_without_a_credential(service):
    with Attest(service.url) as client, pytest.raises(AttestError) as refused:
        client.recall("client-u")
    assert refused.value.status == 401
    assert json.dumps(refused.value.to_dict())


def test_the_client_declares_and_lists_predicates(service, ledger):
    declared = ledger.declare_predicate("prefers_theme", "one", description="UI theme")
    assert_shape(declared, t.Predicate)
    assert (declared["name"], declared["cardinality"], declared["builtin"]) == (
        "prefers_theme",
        "one",
        False,
    )
    assert ledger.declare_predicate("prefers_theme", "one") == declared
    listed = ledger.predicates()["predicates"]
    assert listed[0]["builtin"] and listed[-1] == declared
    with pytest.raises(AttestError) as refused:
        ledger.declare_predicate("lives_in", "many")
    assert (refused.value.status, refused.value.code) == (409, "predicate_conflict")


def test_credit_bought_with_the_payer_key_pays_calls_with_only_the_credential(service, payer_key):
    with Attest(service.url, payer_key=payer_key) as buyer:
        bought = buyer.buy_credits("2.00")  # above the SDK's US$1 default cap: raised for it
    assert_shape(bought, t.CreditsBought)
    assert bought["balance"] == "2.00" and bought["credential"].startswith("att_")
    landed = service.facilitator.landed
    with Attest(service.url, credential=bought["credential"]) as client:  # no wallet
        answer = client.verify_quote(service.article, QUOTE, match="exact")
        assert (answer["tier"], answer["rail"]) == ("paid", "credit")
        statement = client.credits()
    assert service.facilitator.landed == landed  # paid from credit: nothing settled on-chain
    assert_shape(statement, t.CreditStatement)
    assert statement["balance"] == "1.99"
    assert [m["type"] for m in statement["movements"]] == ["draw", "hold", "top_up"]
    with Attest(service.url, payer_key=payer_key, credential=bought["credential"]) as topping:
        assert topping.buy_credits("0.50")["balance"] == "2.49"
