"""The offline checker (python -m receipts.check) on receipts the real service issues.

Answers come from the service in process (samples, verify/quote against a loopback page)
and multi-page receipts from receipts.services.issue_receipt over the engine's own
results; every kind of tampering is refused with its own exit status and reason.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from joserfc.jwk import OKPKey

from attest_client.check import main
from attest_core.canonical import b64url_encode, canonical_json
from attest_core.check_findings import EXIT_CODES
from attest_core.checks import check_offline
from attest_core.jws import sign_compact
from attest_core.normalise import normalise
from attest_core.passages import find_passages
from receipts import selectors
from receipts.payloads import PageClaims, PassageClaims, ResultClaims, quote_sha256
from receipts.services import issue_receipt
from tests.verification.conftest import PageServer, page
from verification.engine.html_text import html_text
from verification.engine.match import match_quote
from verification.pipeline.samples import SAMPLE_QUOTES, sample_page_bytes

# Issuing a receipt appends it to the transparency log.
pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]

PAGE_A = (
    "The committee said it was \u201cdeeply concerned\u201d about the results of the study. "
    "It recommended a review of every programme before 2027 \u2014 without delay. "
    "The review, the committee said, is overdue."
)
PAGE_B = (
    "Harbour water quality improved in 2025. Nitrate levels fell 18 % after three years of "
    "increases. The port authority will publish monthly figures from March."
)
QUOTES = {
    "exact": "Deeply   concerned\u201d about the RESULTS",  # normalised and case-folded to match
    "fuzzy": "It recommended a reveiw of every programme before 2027",
    "none": "the committee approved the budget without debate",
    "passages": "The port authority reported an 18 percent drop in nitrate levels",
}


def _text(raw: str) -> str:
    return normalise(raw).text


def _engine_result(page_index: int, text: str, quote: str, mode: str) -> ResultClaims:
    """What the service would sign for this quote on this text (through the engine itself)."""
    wanted = normalise(quote).text
    extra = {}
    if mode == "passages":
        found = find_passages(text, wanted)
        passages = [PassageClaims(p.start, p.end, p.score) for p in found.passages]
        extra = {"scorer": found.scorer, "passages": passages}
    else:
        found = match_quote(text, wanted, mode=mode)
    return ResultClaims(
        page=page_index,
        quote_sha256=quote_sha256(quote),
        mode=mode,
        match=found.match,
        score=found.score,
        start=found.start,
        end=found.end,
        **extra,
    )


def _page_claims(url: str, text: str) -> PageClaims:
    return PageClaims(
        url=url,
        final_url=url,
        http_status=200,
        content_kind="real",
        content_sha256=hashlib.sha256(f"<p>{text}</p>".encode()).hexdigest(),
        normalised_sha256=hashlib.sha256(text.encode()).hexdigest(),
        evidence={"address": "203.0.113.7", "redirects": []},
    )


def _batch(results: list[ResultClaims] | None = None) -> str:
    """A two-page, four-result receipt (exact, fuzzy, none on page A; passages on page B)."""
    a, b = _text(PAGE_A), _text(PAGE_B)
    if results is None:
        results = [
            _engine_result(0, a, QUOTES["exact"], "fuzzy"),
            _engine_result(0, a, QUOTES["fuzzy"], "fuzzy"),
            _engine_result(0, a, QUOTES["none"], "exact"),
            _engine_result(1, b, QUOTES["passages"], "passages"),
        ]
    return issue_receipt(
        route="verify/citations",
        request_id="req-check",
        tier="paid",
        pages=[_page_claims("https://a.example/report", a), _page_claims("https://b.example/", b)],
        results=results,
    ).receipt


def _keys() -> dict:
    return selectors.signing_keyring().public_keys()


@pytest.fixture
def files(tmp_path):
    """Write named files (str or JSON-able) into a temp dir and return their paths."""

    def write(name: str, content) -> str:
        path = tmp_path / name
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content), encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def jwks_file(files) -> str:
    return files("jwks.json", selectors.public_jwks())


def _run(*argv: str, stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out, stdin=io.StringIO(stdin))
    return code, out.getvalue()


def _sample_text() -> str:
    return _text(html_text(sample_page_bytes().decode("utf-8")).text)


def _reencoded(token: str, *, header: dict | None = None, claims: dict | None = None) -> str:
    """The token with its header or payload replaced, the old signature kept."""
    head, body, signature = token.split(".")
    if header is not None:
        head = b64url_encode(json.dumps(header).encode())
    if claims is not None:
        body = b64url_encode(canonical_json(claims))
    return f"{head}.{body}.{signature}"


def _claims(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def _signed_raw(claims: dict) -> str:
    """Sign arbitrary claims with the service's key: what a faulty or lying issuer could do."""
    key = selectors.signing_keyring().signing_key()
    return sign_compact(canonical_json(claims), key=key.private, kid=key.kid)


# --- receipts the service issues check out -------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["fuzzy", "exact", "passages"])
def test_a_sample_answer_checks_with_its_page_text_and_quote(api, files, jwks_file, mode):
    answer = api.get("/v1/sample/quote", {"match": mode}).json()
    code, out = _run(
        files("answer.json", answer),
        "--jwks",
        jwks_file,
        "--text",
        files("page.txt", _sample_text() + "\n"),  # as `jq -r .text` saves it
        "--quote",
        SAMPLE_QUOTES[mode],
    )
    assert code == 0, out
    assert out.splitlines()[-1].startswith("VALID")
    assert "FAIL" not in out and "SKIP" not in out
    assert "route        sample/quote" in out
    held = {
        "fuzzy": f"scores {answer['result']['score']} against the quote, as signed",
        "exact": "is the quote (after normalisation)",
        "passages": "lexical-v2 finds the signed passages",
    }
    assert held[mode] in out


@pytest.mark.django_db
def test_a_receipt_alone_checks_its_signature_and_prints_its_claims(
    api, files, jwks_file, settings
):
    receipt = api.get("/v1/sample/quote").json()["receipt"]
    code, out = _run(receipt, "--jwks", jwks_file)
    assert code == 0
    assert f"page 0  {settings.ATTEST_PUBLIC_URL}/v1/sample/page" in out
    assert "result 0  page 0, mode fuzzy: fuzzy, score" in out
    assert "OK    signature" in out


@pytest.mark.django_db
def test_a_receipt_is_read_from_stdin(api, jwks_file):
    receipt = api.get("/v1/sample/quote").json()["receipt"]
    assert _run("-", "--jwks", jwks_file, "--quiet", stdin=receipt + "\n") == (
        0,
        "VALID: the signature holds and so does every check the inputs allowed.\n",
    )


@pytest.fixture
def article_server(settings):
    server = PageServer().start()
    server.routes["/article"] = page(f"<html><body><p>{PAGE_A}</p></body></html>")
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", server.port)})
    cache.clear()
    yield server
    server.server.shutdown()
    cache.clear()


@pytest.mark.django_db
def test_a_verify_quote_answer_from_a_real_fetch_checks(api, files, jwks_file, article_server):
    quote = "\u201cdeeply concerned\u201d about the results of the study"
    answer = api.post(
        "/v1/verify/quote",
        {"url": article_server.url("/article"), "quote": quote},
        format="json",
    ).json()
    assert answer["result"]["match"] == "exact"
    code, out = _run(
        files("answer.json", answer),
        "--jwks",
        jwks_file,
        "--text",
        files("page.txt", _text(PAGE_A)),
        "--quote",
        quote,
    )
    assert code == 0, out
    assert "route        verify/quote" in out


@pytest.mark.django_db
def test_a_multi_page_receipt_checks_every_result_on_its_own_page(files, jwks_file):
    code, out = _run(
        _batch(),
        "--jwks",
        jwks_file,
        "--text",
        files("b.txt", _text(PAGE_B)),
        "--text",
        files("a.txt", _text(PAGE_A)),
        *[arg for quote in QUOTES.values() for arg in ("--quote", quote)],
    )
    assert code == 0, out
    report = check_offline(
        _batch(),
        public_keys=_keys(),
        texts=[("a", _text(PAGE_A)), ("b", _text(PAGE_B))],
        quotes=list(QUOTES.values()),
    )
    reasons = [(f.status, f.reason) for f in report.findings if f.kind == "offsets"]
    assert reasons == [
        ("ok", "offsets"),
        ("ok", "span_holds_quote"),  # exact, though sent in another case and spacing
        ("ok", "offsets"),
        ("ok", "span_holds_quote"),  # fuzzy: the span scores as signed
        ("ok", "offsets"),
        ("ok", "span_holds_quote"),  # none: the quote is not on the page
        ("ok", "offsets"),
        ("ok", "passages_recomputed"),
    ]
    assert "a.txt is the normalised text of page 0" in out
    assert "b.txt is the normalised text of page 1" in out


@pytest.mark.django_db
def test_an_exact_span_is_tied_to_the_digest_without_the_quote_when_it_is_the_same_bytes():
    a = _text(PAGE_A)
    quote = "It recommended a review of every programme"  # already normalised, page's case
    token = _batch([_engine_result(0, a, quote, "exact")])
    report = check_offline(token, public_keys=_keys(), texts=[("a", a)])
    assert [f.reason for f in report.findings][-1] == "span_is_quote"
    other = _batch([_engine_result(0, a, quote.upper(), "exact")])
    report = check_offline(other, public_keys=_keys(), texts=[("a", a)])
    assert report.findings[-1].status == "skip"
    assert report.findings[-1].reason == "quote_needed"
    assert report.exit_code == 0


@pytest.mark.django_db
def test_the_jwks_can_be_fetched_from_a_url(api):
    server = PageServer().start()
    try:
        server.routes["/.well-known/jwks.json"] = page(
            json.dumps(selectors.public_jwks()), content_type="application/json"
        )
        receipt = api.get("/v1/sample/quote").json()["receipt"]
        code, out = _run(receipt, "--jwks", server.url("/.well-known/jwks.json"), "-q")
        assert code == 0, out
        assert server.paths() == ["/.well-known/jwks.json"]
    finally:
        server.server.shutdown()


# --- every kind of tampering is refused, each with its own reason -------------------------


@pytest.mark.django_db
def test_an_altered_signature_is_refused(files, jwks_file):
    token = _batch()
    head, body, signature = token.split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    code, out = _run(f"{head}.{body}.{flipped}", "--jwks", jwks_file)
    assert code == EXIT_CODES["signature"] == 1
    assert out.splitlines()[-1].startswith("INVALID (signature: bad_signature): The signature")
    assert "page 0" not in out  # claims that do not verify are never shown


@pytest.mark.django_db
def test_an_altered_payload_is_refused(jwks_file):
    token = _batch()
    claims = _claims(token)
    claims["results"][0]["start"] += 1
    code, out = _run(_reencoded(token, claims=claims), "--jwks", jwks_file)
    assert code == EXIT_CODES["signature"]
    assert "bad_signature" in out.splitlines()[-1]


@pytest.mark.django_db
@pytest.mark.parametrize("alg", ["HS256", "none", "Ed25519"])
def test_an_algorithm_other_than_eddsa_is_refused(jwks_file, alg):
    token = _batch()
    header = {
        "alg": alg,
        "kid": selectors.signing_keyring().active.kid,
        "typ": "attest-receipt+jwt",
    }
    code, out = _run(_reencoded(token, header=header), "--jwks", jwks_file)
    assert code == EXIT_CODES["key"] == 3
    assert "(key: unsupported_algorithm)" in out


@pytest.mark.django_db
def test_a_receipt_of_another_type_is_refused(jwks_file):
    token = _batch()
    header = {"alg": "EdDSA", "kid": selectors.signing_keyring().active.kid, "typ": "JWT"}
    code, out = _run(_reencoded(token, header=header), "--jwks", jwks_file)
    assert code == EXIT_CODES["signature"]
    assert "wrong_type" in out


@pytest.mark.django_db
def test_a_key_the_jwks_does_not_hold_is_refused(files):
    other = OKPKey.generate_key("Ed25519")
    jwks = {"keys": [{**other.as_dict(private=False), "kid": other.thumbprint()}]}
    code, out = _run(_batch(), "--jwks", files("other.json", jwks))
    assert code == EXIT_CODES["key"]
    kid = selectors.signing_keyring().active.kid
    assert f"INVALID (key: unknown_key): The receipt names key {kid}, which the JWKS" in out


@pytest.mark.django_db
def test_a_cut_receipt_is_malformed(jwks_file):
    code, out = _run(_batch()[:-30] + ".x", "--jwks", jwks_file)
    assert code == EXIT_CODES["signature"]
    assert "(signature: malformed)" in out


@pytest.mark.django_db
def test_an_altered_text_is_refused(files, jwks_file):
    text = _text(PAGE_A).replace("2027", "2028")
    code, out = _run(_batch(), "--jwks", jwks_file, "--text", files("a.txt", text))
    assert code == EXIT_CODES["text"] == 5
    assert "INVALID (text: text_mismatch): " in out
    assert "no page of the 2 signs that hash" in out


@pytest.mark.django_db
def test_a_quote_the_receipt_does_not_sign_is_refused(jwks_file):
    code, out = _run(_batch(), "--jwks", jwks_file, "--quote", QUOTES["exact"] + " ")
    assert code == EXIT_CODES["quote"] == 7
    assert "INVALID (quote: quote_not_signed)" in out


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda a: a["result"].update(start=a["result"]["start"] + 1), "result 0: start"),
        (lambda a: a["result"].update(match="exact"), "result 0: match"),
        (lambda a: a["page"].update(content_kind="bot_wall"), "page 0: content_kind"),
        (lambda a: a["page"].update(requested_url="https://else.example/"), "requested_url"),
        (lambda a: a.update(tier="paid"), "tier is 'paid'"),
    ],
)
def test_an_answer_edited_around_its_receipt_is_refused(api, files, jwks_file, edit, field):
    answer = api.get("/v1/sample/quote").json()
    edit(answer)
    code, out = _run(files("answer.json", answer), "--jwks", jwks_file)
    assert code == EXIT_CODES["answer"] == 8
    assert out.splitlines()[-1].startswith("INVALID (answer: answer_mismatch): ")
    assert field in out.splitlines()[-1]


@pytest.mark.django_db
def test_edited_passages_in_an_answer_are_refused(api, files, jwks_file):
    answer = api.get("/v1/sample/quote", {"match": "passages"}).json()
    answer["result"]["passages"][1]["score"] = 0.9
    code, out = _run(files("answer.json", answer), "--jwks", jwks_file)
    assert code == EXIT_CODES["answer"]
    assert "result 0 passage 1: score is 0.9" in out


def _offsets_failure(results: list[ResultClaims], quote: str) -> tuple[int, str, str]:
    report = check_offline(
        _batch(results), public_keys=_keys(), texts=[("a", _text(PAGE_A))], quotes=[quote]
    )
    failure = report.failures[0]
    return report.exit_code, failure.reason, failure.message


@pytest.mark.django_db
def test_signed_offsets_that_do_not_hold_the_quote_are_refused():
    a = _text(PAGE_A)
    good = _engine_result(0, a, QUOTES["exact"], "exact")
    moved = ResultClaims(**{**good.as_dict(), "start": good.start + 4, "end": good.end + 4})
    code, reason, message = _offsets_failure([moved], QUOTES["exact"])
    assert (code, reason) == (EXIT_CODES["offsets"], "span_not_quote")
    assert message.startswith(f"result 0: text[{good.start + 4}:{good.end + 4}] reads ")


@pytest.mark.django_db
def test_signed_offsets_past_the_end_of_the_text_are_refused():
    a = _text(PAGE_A)
    good = _engine_result(0, a, QUOTES["exact"], "exact")
    beyond = ResultClaims(**{**good.as_dict(), "start": len(a) - 2, "end": len(a) + 5})
    code, reason, message = _offsets_failure([beyond], QUOTES["exact"])
    assert (code, reason) == (6, "offsets_outside_text")
    assert f"({len(a)} characters)" in message


@pytest.mark.django_db
def test_a_signed_fuzzy_score_the_span_does_not_have_is_refused():
    good = _engine_result(0, _text(PAGE_A), QUOTES["fuzzy"], "fuzzy")
    assert good.match == "fuzzy"
    inflated = ResultClaims(**{**good.as_dict(), "score": 0.999})
    code, reason, message = _offsets_failure([inflated], QUOTES["fuzzy"])
    assert (code, reason) == (6, "span_not_quote")
    assert f"scores {good.score} against the quote, but the receipt signs 0.999" in message


@pytest.mark.django_db
def test_none_is_refused_when_the_quote_is_on_the_page_word_for_word():
    quote = "It recommended a review of every programme"
    lying = ResultClaims(0, quote_sha256(quote), "fuzzy", "none", None, None, None)
    code, reason, message = _offsets_failure([lying], quote)
    assert (code, reason) == (6, "span_not_quote")
    assert "on the page word for word at" in message


@pytest.mark.django_db
def test_passages_the_scorer_does_not_find_are_refused():
    b = _text(PAGE_B)
    good = _engine_result(1, b, QUOTES["passages"], "passages")
    shifted = [PassageClaims(p.start, p.end, round(p.score + 0.1, 3)) for p in good.passages]
    forged = ResultClaims(**{**good.as_dict(), "passages": shifted})
    report = check_offline(
        _batch([forged]), public_keys=_keys(), texts=[("b", b)], quotes=[QUOTES["passages"]]
    )
    assert report.exit_code == 6
    assert report.failures[0].reason == "passages_differ"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["results"][0].update(page=5), "points at page 5"),
        (lambda c: c["results"][0].update(start=9, end=3), "start <= end"),
        (lambda c: c["results"][0].update(match="exact", start=None, end=None), "match 'exact'"),
        (lambda c: c["pages"][0].update(normalised_sha256="abc"), "normalised_sha256"),
        (lambda c: c.update(v=2), "payload version 2"),
        (lambda c: c.pop("results"), "no pages and results"),
    ],
)
def test_signed_claims_that_are_not_a_receipt_are_refused(jwks_file, edit, expected):
    claims = _claims(_batch())
    edit(claims)
    code, out = _run(_signed_raw(claims), "--jwks", jwks_file)
    assert code == EXIT_CODES["payload"] == 4
    assert "INVALID (payload: malformed_payload)" in out
    assert expected in out.splitlines()[-1]


# --- what cannot be read stops the checker with status 2 ----------------------------------


@pytest.mark.parametrize(
    ("jwks", "message"),
    [
        ("not json", "is not JSON"),
        ({"keys": "x"}, "not a JWKS"),
        ({"keys": [{"kty": "RSA", "n": "x", "e": "AQAB"}]}, "holds no Ed25519 key"),
        ({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AAAA", "kid": "k"}]}, "not a usable"),
    ],
)
def test_an_unusable_jwks_is_a_usage_error(files, capsys, jwks, message):
    code, out = _run("a.b.c", "--jwks", files("jwks.json", jwks))
    assert code == EXIT_CODES["usage"] == 2
    assert out == ""
    assert message in capsys.readouterr().err


def test_a_jwks_entry_whose_kid_is_not_its_thumbprint_is_refused(files, capsys):
    key = OKPKey.generate_key("Ed25519")
    jwks = {"keys": [{**key.as_dict(private=False), "kid": "relabelled"}]}
    assert _run("a.b.c", "--jwks", files("jwks.json", jwks))[0] == 2
    assert f"not its RFC 7638 thumbprint {key.thumbprint()}" in capsys.readouterr().err


def test_a_jwks_holding_a_private_key_is_refused(files, capsys):
    key = OKPKey.generate_key("Ed25519")
    jwks = {"keys": [{**key.as_dict(private=True), "kid": key.thumbprint()}]}
    assert _run("a.b.c", "--jwks", files("jwks.json", jwks))[0] == 2
    assert "holds a private key" in capsys.readouterr().err


@pytest.mark.django_db
def test_missing_files_and_answers_without_a_receipt_are_usage_errors(files, jwks_file, capsys):
    assert _run("no/such/answer.json", "--jwks", jwks_file)[0] == 2
    assert "cannot read no/such/answer.json" in capsys.readouterr().err
    assert _run(files("answer.json", {"result": {}}), "--jwks", jwks_file)[0] == 2
    assert 'has no "receipt" string' in capsys.readouterr().err
    assert _run(_batch(), "--jwks", jwks_file, "--text", "missing.txt")[0] == 2
    assert "cannot read missing.txt" in capsys.readouterr().err


# --- it runs as a command, without Django ---------------------------------------------------


@pytest.mark.django_db
def test_python_m_receipts_check_runs_without_importing_django(api, files, jwks_file):
    answer = files("answer.json", api.get("/v1/sample/quote", {"match": "exact"}).json())
    done = subprocess.run(
        [sys.executable, "-m", "receipts.check", answer, "--jwks", jwks_file, "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("VALID")
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, attest_client.check; print('django' in sys.modules)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.strip() == "False", probe.stderr
