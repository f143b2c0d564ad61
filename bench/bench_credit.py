"""Server CPU of a credit-paid verify/quote against an x402-paid one (issue 34).

The real route (wiring.urls) on a page served from another process on loopback, in this
process through Django's test client, so ``time.process_time`` around a call is the
server's CPU for it (the page server's is not counted). x402 payments are signed before
the timed loop (signing is the client's work) and settled by the built-in local
facilitator; the credit is bought once over x402. The two kinds alternate call by call,
so a load that changes during the run weighs on both alike.
"""

from __future__ import annotations

import os
import statistics
import time

from bench.setup import django_on_a_scratch_database, page_server

CALLS = 150
PAGE = "<html><body><p>The committee said the review is overdue.</p></body></html>"


def main() -> None:
    server, port = page_server(PAGE)
    os.environ.update(
        X402_FACILITATOR_URL="",
        ATTEST_TRIAL_CALLS_PER_DAY="0",
        ATTEST_UNPAID_RATE="1000000/m",
        ATTEST_HOST_RATE="1000000/m",
        ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
    )
    django_on_a_scratch_database("credit", keep_database_url=True)
    from django.core.management import call_command

    call_command("ensure_signing_key", verbosity=0)
    try:
        _run(port)
    finally:
        server.terminate()


def _run(port: int) -> None:
    from django.test import Client
    from eth_account import Account
    from x402 import x402ClientSync
    from x402.http import decode_payment_required_header, encode_payment_signature_header
    from x402.mechanisms.evm.exact import ExactEvmClientScheme

    payer = x402ClientSync()
    payer.register("eip155:84532", ExactEvmClientScheme(Account.create()))
    payer.set_spend_controls({"max_amount_per_payment": "$100"})
    client = Client()
    body = {"url": f"http://127.0.0.1:{port}/article.html", "quote": "the review is overdue"}

    def post(path: str, data: dict, **headers):
        return client.post(path, data, content_type="application/json", **headers)

    offer = decode_payment_required_header(post("/v1/verify/quote", body)["PAYMENT-REQUIRED"])
    payments = [
        encode_payment_signature_header(payer.create_payment_payload(offer)) for _ in range(CALLS)
    ]
    top_up = decode_payment_required_header(
        post("/v1/credits", {"amount": "5.00"})["PAYMENT-REQUIRED"]
    )
    bought = post(
        "/v1/credits",
        {"amount": "5.00"},
        HTTP_PAYMENT_SIGNATURE=encode_payment_signature_header(
            payer.create_payment_payload(top_up)
        ),
    )
    credential = bought.json()["credential"]
    for _warm in range(3):  # first calls build caches both kinds share
        warm = post("/v1/verify/quote", body, HTTP_AUTHORIZATION=f"Bearer {credential}")
        assert warm.status_code == 200, warm.content

    x402_cpu, credit_cpu = [], []
    for index in range(CALLS):
        for kind, samples, headers in (
            ("x402", x402_cpu, {"HTTP_PAYMENT_SIGNATURE": payments[index]}),
            ("credit", credit_cpu, {"HTTP_AUTHORIZATION": f"Bearer {credential}"}),
        ):
            started = time.process_time()
            response = post("/v1/verify/quote", body, **headers)
            samples.append((time.process_time() - started) * 1000)
            assert response.status_code == 200, response.content
            assert response.json()["rail"] == kind
    load = os.getloadavg()
    x402_median, credit_median = statistics.median(x402_cpu), statistics.median(credit_cpu)
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {CALLS} calls each, alternating"
    )
    print(f"verify/quote paid over x402:   server CPU median {x402_median:6.2f} ms")
    print(f"verify/quote paid from credit: server CPU median {credit_median:6.2f} ms")
    print(f"credit / x402: {credit_median / x402_median:.2f}")
