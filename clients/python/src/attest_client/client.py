"""``Attest``: one method per route of the service, typed answers, payment and retries."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote as url_quote

import httpx

from attest_client.check import check_receipt as check_offline_receipt
from attest_client.errors import AttestError
from attest_client.transport import Payer, Transport
from attest_client.types import (
    ChangePage,
    ConsistencyProof,
    CreditsBought,
    CreditStatement,
    Erasure,
    Fact,
    FactPage,
    FetchAnswer,
    InclusionProof,
    Jwks,
    ObservationsAnswer,
    Predicate,
    PredicateList,
    Rebuild,
    ReceiptVerifyAnswer,
    SubjectPage,
    TreeHead,
    VerifyCitationsAnswer,
    VerifyQuoteAnswer,
    VerifyQuotesAnswer,
)
from attest_core.check_findings import CheckReport

_Answer = TypeVar("_Answer")


def _body(required: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The request body: the required fields, then the options that were given."""
    return {**required, **{k: v for k, v in options.items() if v is not None}}


class Attest:
    """A client of one Attest service.

    ``payer_key`` (a hex EVM private key) pays priced calls through the x402 SDK once the
    free trial is spent; ``credential`` (a project's bearer credential) opens the fact
    ledger and pays priced calls from the project's prepaid credit (no wallet needed; a
    ``payer_key`` as well pays whatever the credit cannot). A refusal raises
    :class:`AttestError` with the API's code, message, details and HTTP status.
    """

    def __init__(
        self,
        base_url: str,
        payer_key: str | None = None,
        credential: str | None = None,
        *,
        timeout: float = 120.0,
        http: httpx.Client | None = None,
    ) -> None:
        payer = Payer(payer_key) if payer_key else None
        self.transport = Transport(
            base_url, credential=credential, payer=payer, timeout=timeout, http=http
        )

    @property
    def base_url(self) -> str:
        return self.transport.base_url

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Attest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _json(
        self, answer: type[_Answer], method: str, path: str, body: Any = None, params: Any = None
    ) -> _Answer:
        """The route's JSON answer, typed as ``answer`` (the shape the route's schema gives)."""
        result: _Answer = self.transport.request(method, path, body=body, params=params).json()
        return result

    # --- prepaid credit -------------------------------------------------------------

    def credits(self, *, after: str | None = None, limit: int | None = None) -> CreditStatement:
        """GET /v1/credits: the credential's balance and its movements, newest first."""
        params = {k: v for k, v in {"after": after, "limit": limit}.items() if v is not None}
        return self._json(CreditStatement, "GET", "/v1/credits", params=params)

    def buy_credits(self, amount: str) -> CreditsBought:
        """POST /v1/credits: buy ``amount`` US dollars ("5.00") of credit with the payer key.

        With a credential its project's balance grows; without one a new project is made
        and the answer carries its credential, shown this once.
        """
        response = self.transport.request(
            "POST", "/v1/credits", body={"amount": amount}, max_usd=amount
        )
        result: CreditsBought = response.json()
        return result

    # --- verification ---------------------------------------------------------------

    def verify_quote(self, url: str, quote: str, **options: Any) -> VerifyQuoteAnswer:
        """POST /v1/verify/quote. Options: ``match`` ("fuzzy", "exact", "passages"),
        ``case_sensitive``, ``threshold``."""
        return self._json(
            VerifyQuoteAnswer,
            "POST",
            "/v1/verify/quote",
            _body({"url": url, "quote": quote}, options),
        )

    def verify_quotes(self, url: str, quotes: Sequence[str], **options: Any) -> VerifyQuotesAnswer:
        """POST /v1/verify/quotes: several quotes on one page, one fetch."""
        body = _body({"url": url, "quotes": list(quotes)}, options)
        return self._json(VerifyQuotesAnswer, "POST", "/v1/verify/quotes", body)

    def verify_citations(
        self, citations: Sequence[Mapping[str, str]], **options: Any
    ) -> VerifyCitationsAnswer:
        """POST /v1/verify/citations: ``[{url, quote}, ...]``, each page fetched once."""
        body = _body({"citations": [dict(c) for c in citations]}, options)
        return self._json(VerifyCitationsAnswer, "POST", "/v1/verify/citations", body)

    def fetch(self, url: str) -> FetchAnswer:
        """POST /v1/fetch: the page's normalised text, as the matcher reads it."""
        return self._json(FetchAnswer, "POST", "/v1/fetch", {"url": url})

    def sample_quote(self, *, match: str | None = None) -> VerifyQuoteAnswer:
        """GET /v1/sample/quote: a free, signed sample answer (``match="passages"``: the
        sample of a paraphrased claim)."""
        params = {"match": match} if match is not None else None
        return self._json(VerifyQuoteAnswer, "GET", "/v1/sample/quote", params=params)

    def sample_citations(self) -> VerifyCitationsAnswer:
        """GET /v1/sample/citations: a free, signed sample batch answer."""
        return self._json(VerifyCitationsAnswer, "GET", "/v1/sample/citations")

    def sample_page(self, *, missing: bool = False) -> str:
        """GET /v1/sample/page, the sample's HTML page; ``missing=True``: GET
        /v1/sample/missing, the demo page that is not there (a 404 by design)."""
        if missing:
            accept = {"Accept": "text/html"}
            return self.transport.request(
                "GET", "/v1/sample/missing", headers=accept, accept=(404,)
            ).text
        return self.transport.request(
            "GET", "/v1/sample/page", headers={"Accept": "text/html"}
        ).text

    # --- receipts -------------------------------------------------------------------

    def jwks(self) -> Jwks:
        """GET /.well-known/jwks.json: the public keys receipts are signed with."""
        return self._json(Jwks, "GET", "/.well-known/jwks.json")

    def receipt_verify(
        self,
        receipt: str,
        *,
        text: str | None = None,
        quote: str | None = None,
        page: int | None = None,
    ) -> ReceiptVerifyAnswer:
        """POST /v1/receipt/verify: the service checks a receipt (``valid`` false is an
        answer, not an error)."""
        body = _body({"receipt": receipt}, {"text": text, "quote": quote, "page": page})
        return self._json(ReceiptVerifyAnswer, "POST", "/v1/receipt/verify", body)

    def check_receipt(
        self,
        receipt: str | Mapping[str, Any],
        *,
        jwks: Mapping[str, Any] | str | None = None,
        text: str | Sequence[str] | None = None,
        quote: str | Sequence[str] | None = None,
    ) -> CheckReport:
        """Check a receipt (or a whole answer) offline, as ``attest check`` does; ``jwks``
        defaults to this service's, fetched once."""
        return check_offline_receipt(
            receipt, jwks=self.jwks() if jwks is None else jwks, text=text, quote=quote
        )

    # --- the transparency log --------------------------------------------------------

    def log_head(self) -> TreeHead:
        """GET /v1/log/head: the log's signed tree head (check it with the JWKS)."""
        return self._json(TreeHead, "GET", "/v1/log/head")

    def log_proof(self, index: int, tree_size: int) -> InclusionProof:
        """GET /v1/log/proof: the inclusion proof of leaf ``index`` in a tree of ``tree_size``."""
        return self._json(
            InclusionProof, "GET", "/v1/log/proof", params={"index": index, "tree_size": tree_size}
        )

    def log_consistency(self, first: int, second: int) -> ConsistencyProof:
        """GET /v1/log/consistency: proof that the tree of ``second`` leaves extends ``first``."""
        return self._json(
            ConsistencyProof,
            "GET",
            "/v1/log/consistency",
            params={"first": first, "second": second},
        )

    # --- the fact ledger (a bearer credential) ----------------------------------------

    def ingest(self, subject: str, messages: Sequence[Mapping[str, Any]]) -> ObservationsAnswer:
        """POST /v1/observations: messages ``{id, role, text, occurred_at, ...}``."""
        body = {"subject": subject, "messages": [dict(m) for m in messages]}
        return self._json(ObservationsAnswer, "POST", "/v1/observations", body)

    def recall(self, subject: str, **options: Any) -> FactPage:
        """POST /v1/recall. Options: ``predicate``, ``query`` (a question: the facts come
        ranked, each with a ``score``), ``valid_at``, ``known_at``, ``limit``, ``after``."""
        return self._json(FactPage, "POST", "/v1/recall", _body({"subject": subject}, options))

    def resolve(self, fact_id: str, **options: Any) -> Fact:
        """POST /v1/citations/resolve: a fact with its evidence and versions."""
        return self._json(
            Fact, "POST", "/v1/citations/resolve", _body({"id": str(fact_id)}, options)
        )

    def facts(self, **filters: Any) -> FactPage:
        """GET /v1/facts, the inventory. Filters: ``subject``, ``predicate``, ``status``,
        ``limit``, ``after``."""
        params = {k: str(v) for k, v in filters.items() if v is not None}
        return self._json(FactPage, "GET", "/v1/facts", params=params)

    def changes(
        self, *, subject: str | None = None, limit: int | None = None, after: Any = None
    ) -> ChangePage:
        """POST /v1/changes: what changed, in commit order; keep ``next`` and pass it back
        as ``after`` to read on, now or later."""
        body = _body({}, {"subject": subject, "limit": limit, "after": after})
        return self._json(ChangePage, "POST", "/v1/changes", body)

    def subjects(self, *, limit: int | None = None, after: str | None = None) -> SubjectPage:
        """GET /v1/subjects: the project's subjects with their fact counts, by ID."""
        params = {k: str(v) for k, v in {"limit": limit, "after": after}.items() if v is not None}
        return self._json(SubjectPage, "GET", "/v1/subjects", params=params)

    def record_fact(
        self, subject: str, predicate: str, statement: str | None = None, **fields: Any
    ) -> Fact:
        """POST /v1/facts: a fact a person states. Fields: ``value``, ``valid_from``,
        ``valid_until``, ``role``, ``authored_by``, ``evidence`` (a receipt and quote, or a
        message's quote), ``extracted_by``. ``statement`` may be left out when a message's
        quote is the evidence."""
        required = {"subject": subject, "predicate": predicate}
        return self._json(
            Fact, "POST", "/v1/facts", _body(required, {"statement": statement, **fields})
        )

    def predicates(self) -> PredicateList:
        """GET /v1/predicates: the built-in predicates, then the project's own."""
        return self._json(PredicateList, "GET", "/v1/predicates")

    def declare_predicate(
        self,
        name: str,
        cardinality: str,
        *,
        description: str | None = None,
        synonyms: Sequence[str] | None = None,
    ) -> Predicate:
        """POST /v1/predicates: declare one of the project's own (``one`` or ``many``), with
        words a question may use for it (``synonyms``); the same declaration again answers
        the same predicate."""
        body = _body(
            {"name": name, "cardinality": cardinality},
            {"description": description, "synonyms": None if synonyms is None else list(synonyms)},
        )
        return self._json(Predicate, "POST", "/v1/predicates", body)

    def retract(
        self, fact_id: str, reason: str, *, replacement: Mapping[str, Any] | None = None
    ) -> Fact:
        """POST /v1/facts/{id}/retract, with an optional correction."""
        body = _body({"reason": reason}, {"replacement": replacement})
        return self._json(
            Fact, "POST", f"/v1/facts/{url_quote(str(fact_id), safe='')}/retract", body
        )

    def rebuild(
        self, *, subject: str | None = None, message_id: str | None = None, project: bool = False
    ) -> Rebuild:
        """POST /v1/rebuilds: one source now, or (``project=True``) the whole project
        queued; follow the latter with :meth:`rebuild_status`."""
        if project == (subject is not None or message_id is not None):
            raise ValueError("give subject and message_id, or project=True")
        body = {"scope": "project"} if project else {"subject": subject, "message_id": message_id}
        return self._json(Rebuild, "POST", "/v1/rebuilds", body)

    def rebuild_status(self, generation_id: int) -> Rebuild:
        """GET /v1/rebuilds/{id}."""
        return self._json(Rebuild, "GET", f"/v1/rebuilds/{int(generation_id)}")

    def erase(self, subject: str, message_id: str | None = None) -> Erasure:
        """POST /v1/erasures: one message, or the whole subject."""
        body = _body({"subject": subject}, {"message_id": message_id})
        return self._json(Erasure, "POST", "/v1/erasures", body)

    def export(self, subject: str) -> Iterator[dict[str, Any]]:
        """GET /v1/subjects/{subject}/export, one dict a line as the stream arrives.

        The last line is ``{"type": "end", ...}``; a stream cut short without it raises
        AttestError ``export_incomplete``.
        """
        path = f"/v1/subjects/{url_quote(subject, safe='')}/export"
        with self.transport.stream("GET", path) as response:
            ended = False
            for line in response.iter_lines():
                if not line:
                    continue
                item = json.loads(line)
                ended = item.get("type") == "end"
                yield item
        if not ended:
            raise AttestError("export_incomplete", "the export stream ended without its end line")

    # --- the service ------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """GET /healthz."""
        return self._json(dict, "GET", "/healthz")

    def openapi(self) -> dict[str, Any]:
        """GET /v1/openapi.json: the schema every answer here follows."""
        return self._json(dict, "GET", "/v1/openapi.json")
