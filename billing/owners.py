"""Who a Bearer credential pays for: an opaque owner key, resolved by a higher app.

Billing keeps balances (``CreditAccount``) keyed by an owner string and knows nothing of
projects or credentials; those live in ``citations``, above billing in the layers. That
app registers, when it loads, the two functions billing needs: one that turns a Bearer
token into its owner key (or None for an unknown, revoked or suspended one), and one that
opens a new owner (self-serve sign-up by payment) and returns its key, a public name and
the credential, shown once. Billing calls them without importing their app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


Resolver = Callable[[str], str | None]
Opener = Callable[[], OpenedOwner]
Namer = Callable[[str], str]

_resolver: Resolver | None = None
_opener: Opener | None = None
_namer: Namer | None = None


def register_owners(*, resolve: Resolver, open_owner: Opener, name: Namer) -> None:
    """Name the functions that resolve, open and name credit owners (one app does)."""
    global _resolver, _opener, _namer
    _resolver, _opener, _namer = resolve, open_owner, name


def bearer_token(authorization: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; "" for any other header."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def owner_of(token: str) -> str:
    """The owner key ``token`` pays for; 401 ``invalid_credential`` when it pays for none."""
    if _resolver is None:
        raise InvalidCredential("No credentials are known to this server.")
    owner = _resolver(token)
    if owner is None:
        raise InvalidCredential()
    return owner


def owner_open() -> OpenedOwner:
    if _opener is None:
        raise LookupError("No app opens credit owners; citations registers one when it loads.")
    return _opener()


def owner_name(owner: str) -> str:
    return _namer(owner) if _namer is not None else owner
