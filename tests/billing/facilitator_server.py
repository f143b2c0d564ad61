"""A facilitator on loopback speaking the x402 HTTP wire format: /supported, /verify, /settle."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from x402 import PaymentPayload, PaymentRequirements, x402FacilitatorSync
from x402.mechanisms.evm.exact import ExactEvmFacilitatorScheme

from tests.billing.chain import MemoryChainSigner

# How /settle misbehaves. "land" means the transfer goes through on the chain first.
SETTLE_MODES = (
    "ok",
    "hang",  # never answers, nothing lands
    "error_500",  # answers 500, nothing lands
    "close",  # closes the connection without an answer, nothing lands
    "land_then_hang",
    "land_then_500",
    "land_then_close",
    "down_after_verify",  # stops listening once /verify has answered: settle is refused
)


class FacilitatorServer:
    """The SDK's facilitator behind a real HTTP server on loopback.

    ``settle_delay`` makes settle slow; ``settle_mode`` (one of SETTLE_MODES) makes it
    fail the way real facilitators and networks do. ``release()`` ends a hang.
    ``hold_next_verify()`` keeps the next /verify waiting until ``let_verify()``, so a test
    can finish another request in between: an interleaving made, not waited for.
    """

    def __init__(
        self,
        network: str,
        *,
        settle_delay: float = 0.0,
        settle_revert: str | None = None,
        verify_invalid_reason: str | None = None,
        settle_transaction: str | None = None,
        settle_mode: str = "ok",
        port: int = 0,
    ) -> None:
        assert settle_mode in SETTLE_MODES, settle_mode
        self.settle_mode = settle_mode
        self._released = threading.Event()
        self.chain = MemoryChainSigner(network)
        self.facilitator = x402FacilitatorSync().register(
            [network], ExactEvmFacilitatorScheme(self.chain)
        )
        self.settle_delay = settle_delay
        # A revert the "chain" answers to every transfer, e.g. a drained wallet.
        self.settle_revert = settle_revert
        # A refusal /verify answers to every payment, in the facilitator's own words.
        self.verify_invalid_reason = verify_invalid_reason
        # A transaction ID /settle reports instead of the chain's own, e.g. a very long one.
        self.settle_transaction = settle_transaction
        self.calls: list[str] = []
        self._verify_lock = threading.Lock()
        self._verify_to_hold: threading.Event | None = None  # set once that /verify waits
        self._verify_go = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FacilitatorServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()

    def release(self) -> None:
        """Let every hanging settle call end (without an answer), and a held /verify go on."""
        self._released.set()
        self._verify_go.set()

    def hold_next_verify(self) -> threading.Event:
        """Make the next /verify wait, unanswered and not yet verified, for ``let_verify()``.
        The returned event is set once that /verify has arrived and waits."""
        arrived = threading.Event()
        with self._verify_lock:
            self._verify_to_hold = arrived
        self._verify_go.clear()
        return arrived

    def let_verify(self) -> None:
        """The held /verify goes on: it verifies the payment as the chain stands now."""
        self._verify_go.set()

    def _wait_if_held(self) -> None:
        with self._verify_lock:
            arrived, self._verify_to_hold = self._verify_to_hold, None
        if arrived is not None:
            arrived.set()
            self._verify_go.wait(60)

    @property
    def landed(self) -> int:
        """Transfers that went through on the chain."""
        return len(self.chain._transfers)

    def _stop_listening(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, body: dict, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # The slow-settle test's client times out and goes away on purpose.
                with contextlib.suppress(BrokenPipeError):
                    self.wfile.write(data)

            def do_GET(self) -> None:
                server.calls.append(self.path)
                supported = server.facilitator.get_supported()
                self._send(supported.model_dump(mode="json", by_alias=True, exclude_none=True))

            def do_POST(self) -> None:
                server.calls.append(self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                payload = PaymentPayload.model_validate(body["paymentPayload"])
                requirements = PaymentRequirements.model_validate(body["paymentRequirements"])
                if self.path == "/verify" and server.verify_invalid_reason:
                    self._send({"isValid": False, "invalidReason": server.verify_invalid_reason})
                    return
                if self.path == "/verify":
                    server._wait_if_held()
                    result = server.facilitator.verify(payload, requirements)
                    if server.settle_mode == "down_after_verify":
                        server._stop_listening()  # before answering: settle finds no one
                    self._send(result.model_dump(mode="json", by_alias=True, exclude_none=True))
                    return
                mode = server.settle_mode
                time.sleep(server.settle_delay)
                if server.settle_revert:
                    server.chain.revert_next(server.settle_revert)
                if mode == "ok" or mode.startswith("land_then_"):
                    result = server.facilitator.settle(payload, requirements)
                    if server.settle_transaction is not None:
                        result.transaction = server.settle_transaction
                if mode == "ok":
                    self._send(result.model_dump(mode="json", by_alias=True, exclude_none=True))
                elif mode.endswith("hang"):
                    server._released.wait(60)
                    self.close_connection = True
                elif mode.endswith("500"):
                    self._send({"error": "internal error"}, status=500)
                else:  # close: hang up without a word
                    self.close_connection = True

        return Handler
