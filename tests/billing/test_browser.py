"""A web page on another origin pays for verify/quote with fetch(), in a real browser.

Playwright drives Debian's Chromium (``.ci/run`` installs it); the page is served from one
origin, the API from another, so every step goes through CORS exactly as for a web client.
The payment is signed by the test through the x402 SDK and handed to the page's script.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from x402.http import decode_payment_required_header, decode_payment_response_header

from billing.models import PaymentClaim
from tests.browser import chromium, needs_chromium
from tests.live_service import free_port

pytestmark = [pytest.mark.django_db(transaction=True)]

QUOTE = "The harbour reopened to ferries on the first of May"
ARTICLE = f"<html><body><article><p>{QUOTE}, after a winter of repairs.</p></article></body></html>"
CLIENT_PAGE = """<!doctype html><html><body><script>
const api = %(api)s;
const body = JSON.stringify(%(body)s);
async function call(payment) {
  const headers = {"Content-Type": "application/json"};
  if (payment) headers["PAYMENT-SIGNATURE"] = payment;
  const r = await fetch(api + "/v1/verify/quote", {method: "POST", headers, body});
  return {
    status: r.status,
    paymentRequired: r.headers.get("PAYMENT-REQUIRED"),
    paymentResponse: r.headers.get("PAYMENT-RESPONSE"),
    requestId: r.headers.get("X-Request-ID"),
    body: await r.json(),
  };
}
</script></body></html>"""


@pytest.fixture
def page_origin(live_server):
    """An HTTP server on its own origin: the web client's page and the article it cites."""
    port = free_port()
    body = {"url": f"http://127.0.0.1:{port}/article.html", "quote": QUOTE}
    pages = {
        "/": CLIENT_PAGE % {"api": json.dumps(live_server.url), "body": json.dumps(body)},
        "/article.html": ARTICLE,
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = pages.get(self.path)
            data = (page or "no such page").encode()
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
    server.server_close()


@needs_chromium
def test_a_page_on_another_origin_pays_for_verify_quote_with_fetch(
    page_origin, live_server, payer, settings, tmp_path
):
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", int(page_origin.rsplit(":", 1)[1]))})
    with chromium(tmp_path / "profile") as browser:
        page = browser.new_page()
        page.goto(f"{page_origin}/")
        offered = page.evaluate("call(null)")
        assert offered["status"] == 402
        assert offered["body"]["error"]["code"] == "payment_required"
        # The page could read the offer header across origins, and the test signs it.
        payment = payer.pay(decode_payment_required_header(offered["paymentRequired"]))
        paid = page.evaluate("payment => call(payment)", payment)
    assert paid["status"] == 200, paid["body"]
    assert (paid["body"]["tier"], paid["body"]["rail"]) == ("paid", "x402")
    assert paid["body"]["result"]["match"] == "exact"
    assert paid["requestId"]
    settled = decode_payment_response_header(paid["paymentResponse"])
    assert settled.success and settled.payer.lower() == payer.address.lower()
    assert PaymentClaim.objects.get().state == "settled"
