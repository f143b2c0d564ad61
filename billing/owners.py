"""Who a Bearer credential pays for: an opaque owner key, resolved by a higher app.

Billing keeps balances (``CreditAccount``) keyed by an owner string and knows nothing of
projects or credentials; those live in ``citations``, above billing in the layers. That
app registers, when it loads, the dotted name of a module with the three functions billing
needs: ``owner_resolve(token)``, a Bearer token's owner key (or None for an unknown,
revoked or suspended one); ``owner_open()``, a new owner (self-serve sign-up by payment)
with its key, a public name and the credential, shown once; ``owner_name(key)``. Billing
imports that module by name on the first credit call, so neither a command nor billing
itself ever imports the app above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from types import ModuleType

from attest.errors import AttestError


class InvalidCredential(AttestError):
    """A Bearer credential on a priced route that pays for no one: never a quiet trial."""

    status_code = 401
    code = "invalid_credential"
    message = (
        "This credential is unknown, revoked or its project suspended; a priced call with it "
        "is never run as a free trial. Send a live credential, or pay with x402."
    )

    def __init__(self, message: str | None = None, **kwargs):
        kwargs.setdefault("headers", {"WWW-Authenticate": 'Bearer realm="attest"'})
        super().__init__(message, **kwargs)


@dataclass(frozen=True)
class OpenedOwner:
    key: str  # the owner key the balance is kept under
    name: str  # what the caller is told it is called (a project's public name)
    credential: str  # shown once, never stored by billing


_provider: str | None = None


def register_owners(module: str) -> None:
    """Name the module whose functions resolve, open and name credit owners (one app's)."""
    global _provider
    _provider = module


def _owners() -> ModuleType:
    if _provider is None:
        raise LookupError("No app provides credit owners; citations registers one when it loads.")
    return import_module(_provider)


def bearer_token(authorization: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; "" for any other header."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def owner_of(token: str) -> str:
    """The owner key ``token`` pays for; 401 ``invalid_credential`` when it pays for none."""
    owner = _owners().owner_resolve(token)
    if owner is None:
        raise InvalidCredential()
    return owner


def owner_open() -> OpenedOwner:
    opened: OpenedOwner = _owners().owner_open()
    return opened


def owner_name(owner: str) -> str:
    name: str = _owners().owner_name(owner)
    return name
