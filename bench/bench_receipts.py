"""Receipt signing and checking speed for a 10-citation batch with passages (pure core)."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime

from joserfc.jwk import OKPKey

from attest_core.jws import check_compact, sign_compact
from attest_core.payloads import (
    PageClaims,
    PassageClaims,
    ReceiptClaims,
    ResultClaims,
    quote_sha256,
)

ROUNDS = 2000


def batch_claims() -> ReceiptClaims:
    digest = hashlib.sha256(b"page").hexdigest()
    pages = [
        PageClaims(
            url=f"https://example.org/paper/{i}",
            final_url=f"https://example.org/paper/{i}",
            http_status=200,
            content_kind="real",
            content_sha256=digest,
            normalised_sha256=digest,
            evidence={"ip": "93.184.215.14", "redirects": [], "tls": "TLSv1.3"},
            doi=f"10.1234/example.{i}",
            doi_status="found",
            retracted=False,
        )
        for i in range(10)
    ]
    results = [
        ResultClaims(
            page=i,
            quote_sha256=quote_sha256(f"claim number {i}"),
            mode="passages",
            match="passages",
            score=0.583,
            start=115,
            end=271,
            scorer="lexical-v2",
            passages=[PassageClaims(115 + 200 * k, 271 + 200 * k, 0.5 - k / 10) for k in range(3)],
        )
        for i in range(10)
    ]
    return ReceiptClaims(
        issuer="https://attest.example",
        issued_at=datetime.now(UTC),
        route="verify/citations",
        request_id="bench",
        tier="paid",
        pages=pages,
        results=results,
    )


def main() -> None:
    key = OKPKey.generate_key("Ed25519")
    kid = key.thumbprint()
    public = {kid: OKPKey.import_key(key.as_dict(private=False))}
    claims = batch_claims()

    started = time.perf_counter()
    for _ in range(ROUNDS):
        token = sign_compact(claims.to_bytes(), key=key, kid=kid)
    sign_seconds = time.perf_counter() - started

    started = time.perf_counter()
    for _ in range(ROUNDS):
        check_compact(token, public_keys=public)
    check_seconds = time.perf_counter() - started

    print(f"receipt for 10 citations with 3 passages each: {len(token)} characters")
    print(f"build + canonicalise + sign: {sign_seconds / ROUNDS * 1e6:.0f} µs per receipt")
    print(f"strict parse + verify + decode: {check_seconds / ROUNDS * 1e6:.0f} µs per receipt")
