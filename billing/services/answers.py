"""Paid answers kept byte for byte, so a retry with the same payment is answered, not charged."""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from x402.http import PAYMENT_RESPONSE_HEADER, X_PAYMENT_RESPONSE_HEADER

from attest.prepared import created, saved
from attest_core.canonical import canonical_json
from billing.models import PaidAnswer, PaymentClaim
from billing.pricing import MAX_TIMEOUT_SECONDS

# How long a settled answer can be fetched again: as long as the validity an offer asks of
# a signature, so a client that signs the offer can always retry within its window.
REPLAY_SECONDS = MAX_TIMEOUT_SECONDS
# Expired answers are looked for once every PRUNE_EVERY answers a process stores (a
# statement a paid call need not send each time), and at most PRUNE_BATCH of them deleted
# then, so pruning never stalls one request and still deletes 5 times faster than answers
# are stored.
PRUNE_BATCH = 50
PRUNE_EVERY = 10
_stored_since_prune = PRUNE_EVERY - 1  # a new process prunes at its first answer


def request_digest(*, method: str, route: str, data: Any, query: Mapping[str, Any]) -> str:
    """SHA-256 of the request as a retry must repeat it: method, route, canonical body and query.

    Key order and whitespace in the JSON body do not matter; every value does.
    """
    try:
        body = canonical_json(data)
    except (TypeError, ValueError):  # not JSON-shaped (e.g. a form): compare its repr
        body = repr(data).encode()
    query_items = sorted((key, list(query.getlist(key))) for key in query)  # type: ignore[attr-defined]
    digest = hashlib.sha256(f"{method.upper()} {route}\n".encode())
    digest.update(canonical_json(query_items) + b"\n" + body)
    return digest.hexdigest()


@dataclass(frozen=True)
class RenderedAnswer:
    """A view's charged answer, rendered to the bytes the caller will receive."""

    status_code: int
    content_type: str
    body: bytes
    headers: dict[str, str]

    @classmethod
    def from_response(cls, response: HttpResponse) -> RenderedAnswer:
        headers = {k: v for k, v in response.items() if k.lower() != "content-type"}
        return cls(response.status_code, response["Content-Type"], response.content, headers)


def answer_store(
    claim: PaymentClaim, rendered: RenderedAnswer, *, payment_response: str = ""
) -> PaidAnswer:
    """Keep the answer for ``claim`` (before it is settled), pruning expired ones."""
    global _stored_since_prune
    _stored_since_prune += 1
    if _stored_since_prune >= PRUNE_EVERY:
        _stored_since_prune = 0
        _prune()
    return created(
        PaidAnswer,
        claim=claim,
        status_code=rendered.status_code,
        content_type=rendered.content_type,
        body=rendered.body,
        headers=rendered.headers,
        payment_response=payment_response,
    )


def answer_mark_settled(answer: PaidAnswer, *, payment_response: str) -> None:
    answer.payment_response = payment_response
    saved(answer, ["payment_response"])


def answer_discard(claim: PaymentClaim) -> None:
    """The answer was withheld for good: its bytes go, the claim's outcome says why."""
    PaidAnswer.objects.filter(claim=claim).delete()


def answer_get(claim: PaymentClaim) -> PaidAnswer | None:
    return PaidAnswer.objects.filter(claim=claim).first()


def answer_for_retry(claim: PaymentClaim) -> PaidAnswer | None:
    """The settled answer a retry may have again: while the authorization and the window last."""
    now = timezone.now()
    if claim.valid_before <= now.timestamp():
        return None
    since = now - datetime.timedelta(seconds=REPLAY_SECONDS)
    return PaidAnswer.objects.filter(claim=claim, created_at__gt=since).first()


def answer_response(answer: PaidAnswer, *, legacy_header: bool) -> HttpResponse:
    """The stored answer as an HTTP response: the same bytes every time it is sent."""
    response = HttpResponse(
        bytes(answer.body), status=answer.status_code, content_type=answer.content_type
    )
    for name, value in answer.headers.items():
        response[name] = value
    if answer.payment_response:
        response[PAYMENT_RESPONSE_HEADER] = answer.payment_response
        if legacy_header:
            response[X_PAYMENT_RESPONSE_HEADER] = answer.payment_response
    return response


def _prune() -> None:
    """Delete answers of settled claims whose retry window has passed.

    Answers of claims still settling or pending are kept whatever their age: they are what
    a retry is served once the settlement is reconciled.
    """
    since = timezone.now() - datetime.timedelta(seconds=REPLAY_SECONDS)
    expired = PaidAnswer.objects.filter(
        created_at__lte=since, claim__state=PaymentClaim.State.SETTLED
    ).values_list("pk", flat=True)[:PRUNE_BATCH]
    PaidAnswer.objects.filter(pk__in=list(expired)).delete()
