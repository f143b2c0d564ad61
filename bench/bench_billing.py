"""Server-side cost of billing per call: offer, trial, and a paid call (local facilitator)."""

from __future__ import annotations

import os
import statistics
import time

from bench.setup import django_on_a_scratch_database


def _timed(label: str, count: int, run) -> None:
    samples = []
    for index in range(count):
        started = time.perf_counter()
        run(index)
        samples.append((time.perf_counter() - started) * 1000)
    print(
        f"{label:<46} median {statistics.median(samples):6.2f} ms  "
        f"p95 {sorted(samples)[int(count * 0.95) - 1]:6.2f} ms  ({count} calls)"
    )


def main() -> None:
    os.environ["X402_FACILITATOR_URL"] = ""
    django_on_a_scratch_database("billing")
    from django.test import Client, override_settings
    from eth_account import Account
    from x402 import x402ClientSync
    from x402.http import decode_payment_required_header, encode_payment_signature_header
    from x402.mechanisms.evm.exact import ExactEvmClientScheme

    payer = x402ClientSync()
    payer.register("eip155:84532", ExactEvmClientScheme(Account.create()))
    count = 200
    quiet = {"ATTEST_UNPAID_RATE": "1000000/m"}  # the bench asks for far more than 300 offers
    with override_settings(
        ROOT_URLCONF="tests.billing.urls", ATTEST_TRIAL_CALLS_PER_DAY=0, **quiet
    ):
        client = Client()
        path = "/v1/test/verify/quote"
        body = {"outcome": "real"}

        def offer(_):
            response = client.post(path, body, content_type="application/json")
            assert response.status_code == 402
            return decode_payment_required_header(response["PAYMENT-REQUIRED"])

        _timed("402 offer", count, offer)
        payment_required = offer(0)
        payments = [
            encode_payment_signature_header(payer.create_payment_payload(payment_required))
            for _ in range(count)
        ]

        def paid(index):
            response = client.post(
                path,
                body,
                content_type="application/json",
                HTTP_PAYMENT_SIGNATURE=payments[index],
            )
            assert response.status_code == 200, response.content

        _timed("paid call: verify + claim + keep answer + settle", count, paid)

        def retry(index):
            response = client.post(
                path,
                body,
                content_type="application/json",
                HTTP_PAYMENT_SIGNATURE=payments[index],
            )
            assert response.status_code == 200, response.content

        _timed("paid retry: the kept answer again", count, retry)

    with override_settings(
        ROOT_URLCONF="tests.billing.urls", ATTEST_TRIAL_CALLS_PER_DAY=10**6, **quiet
    ):

        def trial(_):
            response = client.post(path, body, content_type="application/json")
            assert response.status_code == 200

        _timed("trial call: reserve + record", count, trial)
