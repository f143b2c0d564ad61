"""The x402 ``payment-identifier`` extension: a payer's idempotency key for one paid request.

A payment that carries an identifier its payer already used is not claimed: the same
request gets the first payment's stored answer (or waits for it), another request is
refused with 409, and nothing is charged either way.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from x402 import PaymentPayload
from x402.extensions.payment_identifier import (
    PAYMENT_IDENTIFIER,
    declare_payment_identifier_extension,
    extract_payment_identifier,
    payment_identifier_schema,
    validate_payment_identifier,
)

from billing.exceptions import PaymentIdentifierConflict
from billing.models import PaymentClaim
from billing.unpaid import count_refused_payment


class MalformedPaymentId(ValueError):
    """The payment carries the extension, but not a well-formed identifier."""


def payment_id_declaration() -> dict[str, Any]:
    """The offer's ``payment-identifier`` entry: identifiers are honoured, not required."""
    return {PAYMENT_IDENTIFIER: declare_payment_identifier_extension(required=False)}


def payment_id_read(payload: PaymentPayload) -> str:
    """The identifier ``payload`` carries, "" for none; raise ``MalformedPaymentId``.

    The entry is checked against this server's own schema, never one the payer sent with
    it (a pattern of the payer's choosing could take any time to match).
    """
    extension = (payload.extensions or {}).get(PAYMENT_IDENTIFIER)
    if extension is None:
        return ""
    if not isinstance(extension, dict):
        raise MalformedPaymentId("the payment-identifier extension is not an object")
    # The SDK's own checks (an info object, a boolean ``required``, the id's format), then
    # the schema, as validate_payment_identifier does with it: through a validator built
    # once a process (jsonschema.validate checks the schema against its metaschema and
    # builds a new validator at every call, the costliest part of admitting a payment).
    unschemed = {key: value for key, value in extension.items() if key != "schema"}
    validation = validate_payment_identifier(unschemed)
    if not validation.valid:
        raise MalformedPaymentId("; ".join(validation.errors))
    error = best_match(_schema_validator().iter_errors(extension["info"]))
    if error is not None:
        path = "/".join(str(part) for part in error.absolute_path) or "(root)"
        raise MalformedPaymentId(f"{path}: {error.message}")
    return extract_payment_identifier(payload, validate=False) or ""


@cache
def _schema_validator() -> Any:
    """The payment-identifier schema's validator (the schema checked once, here)."""
    validator_class = validator_for(payment_identifier_schema)
    validator_class.check_schema(payment_identifier_schema)
    return validator_class(payment_identifier_schema)


def payment_id_claim(*, payer: str, payment_id: str) -> PaymentClaim | None:
    """The live claim that ``payer`` made under ``payment_id``, if any."""
    return (
        PaymentClaim.objects.filter(payer=payer, payment_id=payment_id)
        .exclude(state=PaymentClaim.State.RELEASED)
        .first()
    )


def payment_id_conflict(*, client_ip: str, reason: str) -> PaymentIdentifierConflict:
    """409 for an identifier that cannot answer this request; it counts as unpaid work."""
    count_refused_payment(client_ip)
    if reason == "answer_expired":
        message = (
            "This payment identifier paid for this request, but its answer is no longer "
            "kept; nothing was charged. Send a new identifier with a new payment."
        )
    else:
        message = None
    return PaymentIdentifierConflict(message, details={"reason": reason})
