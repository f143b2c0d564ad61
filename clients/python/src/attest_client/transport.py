"""HTTP to one Attest service: the bearer credential, x402 payment and the safe retry.

Every call of :class:`attest_client.Attest` goes through :meth:`Transport.request`, which
another front end (an MCP server forwarding to a remote Attest) can use as it is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx

from attest_client.errors import AttestError

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount

PAYMENT_REQUIRED = "PAYMENT-REQUIRED"
PAYMENT_SIGNATURE = "PAYMENT-SIGNATURE"
PAYMENT_RESPONSE = "PAYMENT-RESPONSE"
# A paid request whose answer was lost (connection dropped, read timed out) is sent again
# with the same payment: the server answers the stored body and never charges twice.
LOST_ANSWER_RETRIES = 2
# A paid request the server is still settling (503 settlement_pending) is asked again after
# its Retry-After, with the same payment, within this many seconds.
SETTLEMENT_WAIT_SECONDS = 60.0


def _refusal(response: httpx.Response) -> AttestError:
    request_id = response.headers.get("X-Request-ID")
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return AttestError(
            error["code"],
            str(error.get("message", "")),
            status=response.status_code,
            details=error.get("details"),
            request_id=request_id,
            headers=dict(response.headers),
        )
    return AttestError(
        "http_error",
        f"HTTP {response.status_code}: {response.text[:200]}",
        status=response.status_code,
        request_id=request_id,
        headers=dict(response.headers),
    )


class Payer:
    """An EVM key that pays x402 offers through the ``x402`` SDK's own client."""

    def __init__(self, private_key: str) -> None:
        from eth_account import Account
        from x402 import x402ClientSync
        from x402.mechanisms.evm.exact import ExactEvmClientScheme

        try:
            # Typed here: eth_utils' combomethod decorator erases from_key's return type.
            self.account: LocalAccount = Account.from_key(private_key)
        except (ValueError, TypeError) as exc:
            raise AttestError("payment", f"the payer key is not a hex private key: {exc}") from None
        self._client = x402ClientSync()
        self._scheme = ExactEvmClientScheme(self.account)
        self._networks: set[str] = set()

    @property
    def address(self) -> str:
        return self.account.address

    def pay(self, payment_required: str, *, max_usd: str | None = None) -> str:
        """The PAYMENT-SIGNATURE header that answers an offer's PAYMENT-REQUIRED header.

        The SDK refuses to sign more than US$1 in one payment; ``max_usd`` raises that cap
        for this one payment (buying prepaid credit, whose amount the caller chose).
        """
        from x402.http import decode_payment_required_header, encode_payment_signature_header

        self._client.set_spend_controls(
            {"max_amount_per_payment": f"${max_usd}"} if max_usd else {}
        )
        try:
            offer = decode_payment_required_header(payment_required)
            for accepted in offer.accepts:
                if accepted.network not in self._networks:
                    self._client.register(accepted.network, self._scheme)
                    self._networks.add(accepted.network)
            return encode_payment_signature_header(self._client.create_payment_payload(offer))
        except Exception as exc:  # the SDK raises its own types and pydantic's
            raise AttestError("payment", f"cannot pay this offer: {exc}") from None


class Transport:
    """One service's base URL, the caller's credential and payer, and an httpx client."""

    def __init__(
        self,
        base_url: str,
        *,
        credential: str | None = None,
        payer: Payer | None = None,
        timeout: float = 120.0,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credential = credential
        self.payer = payer
        self.http = http or httpx.Client(timeout=timeout, trust_env=False)
        self._sleep = sleep
        # The payment header of the last paid call, so a caller can see what was sent.
        self.last_payment: str | None = None

    def close(self) -> None:
        self.http.close()

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.credential:
            headers["Authorization"] = f"Bearer {self.credential}"
        headers.update(extra or {})
        return headers

    def _send(self, method: str, path: str, *, body: Any, params: Any, headers: dict) -> Any:
        content = None if body is None else json.dumps(body).encode("utf-8")
        if content is not None:
            headers = {**headers, "Content-Type": "application/json"}
        return self.http.build_request(
            method, self.base_url + path, content=content, params=params, headers=headers
        )

    def _paid(self, request: httpx.Request, payment: str) -> httpx.Response:
        """Send ``request`` with ``payment``; resend the same payment when the answer was
        lost or is still being settled, never a new one."""
        request.headers[PAYMENT_SIGNATURE] = payment
        self.last_payment = payment
        lost = 0
        deadline = time.monotonic() + SETTLEMENT_WAIT_SECONDS
        while True:
            try:
                response = self.http.send(request)
            except httpx.TransportError as exc:
                if lost >= LOST_ANSWER_RETRIES:
                    raise AttestError(
                        "transport", f"the paid answer was lost {lost + 1} times: {exc}"
                    ) from None
                lost += 1
                continue
            if response.status_code == 503 and _code(response) == "settlement_pending":
                wait = _retry_after(response)
                if time.monotonic() + wait <= deadline:
                    self._sleep(wait)
                    continue
            return response

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Any = None,
        headers: Mapping[str, str] | None = None,
        accept: tuple[int, ...] = (),
        max_usd: str | None = None,
    ) -> httpx.Response:
        """The service's answer (2xx, or a status in ``accept``) to one call, paid when the
        service asks and a payer is set; a refusal raises :class:`AttestError`.

        With a credential the service pays the call from the project's prepaid credit; it
        asks for a payment (402) only when the credit is short, and a payer then pays."""
        request = self._send(method, path, body=body, params=params, headers=self._headers(headers))
        try:
            response = self.http.send(request)
            if response.status_code == 402 and self.payer and PAYMENT_REQUIRED in response.headers:
                payment = self.payer.pay(response.headers[PAYMENT_REQUIRED], max_usd=max_usd)
                response = self._paid(request, payment)
        except httpx.TransportError as exc:
            raise AttestError("transport", f"{method} {path}: {exc}") from None
        if response.is_success or response.status_code in accept:
            return response
        raise _refusal(response)

    @contextmanager
    def stream(self, method: str, path: str, *, params: Any = None) -> Iterator[httpx.Response]:
        """A streamed answer (the ledger's NDJSON export); a refusal raises AttestError."""
        request = self._send(method, path, body=None, params=params, headers=self._headers(None))
        try:
            response = self.http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise AttestError("transport", f"{method} {path}: {exc}") from None
        try:
            if not response.is_success:
                response.read()
                raise _refusal(response)
            yield response
        finally:
            response.close()


def _code(response: httpx.Response) -> str | None:
    try:
        code: str | None = response.json()["error"]["code"]
        return code
    except (ValueError, KeyError, TypeError):
        return None


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(float(response.headers.get("Retry-After", "1")), 0.0)
    except ValueError:
        return 1.0
