"""Bearer authentication with project credentials, for every ledger route."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from attest.errors import AttestError
from attest.prepared import PreparedQuery
from citations.models import Credential, Project

TOKEN_PREFIX = "att"
# att_<12 hex digits>_<URL-safe base64 secret>, with room for longer prefixes later.
_TOKEN_SHAPE = re.compile(rf"{TOKEN_PREFIX}_[0-9a-f]{{1,16}}_[A-Za-z0-9_-]{{1,256}}")


class ProjectSuspended(AttestError):
    status_code = 403
    code = "project_suspended"
    message = "This project is suspended; its credentials are refused until it is reinstated."


@dataclass(frozen=True)
class ProjectPrincipal:
    """Who a ledger request acts for: the project and the credential that proved it."""

    project: Project
    credential: Credential

    is_authenticated = True

    @property
    def actor(self) -> str:
        return f"credential:{self.credential.prefix}"


def new_token() -> tuple[str, str, str]:
    """A fresh credential: (token shown once, lookup prefix, SHA-256 of the token)."""
    prefix = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    return token, prefix, token_sha256(token)


def token_sha256(token: str) -> str:
    # The secret has 256 bits of entropy, so a fast hash is as safe as a slow one.
    return hashlib.sha256(token.encode()).hexdigest()


def _credential(_shape: None, *, prefix: str, now: datetime) -> QuerySet[Credential]:
    """The unrevoked credential with ``prefix`` (``first()``'s query: by key, one row)."""
    return (
        Credential.objects.select_related("project")
        .filter(Q(revoked_at__isnull=True) | Q(revoked_at__gt=now), prefix=prefix)
        .order_by("pk")[:1]
    )


# Every ledger request looks its credential up: compiled once (see attest.prepared).
_CREDENTIAL = PreparedQuery(_credential, prefix=str, now=datetime)


def credential_for_token(token: str) -> Credential | None:
    """The live credential ``token`` proves, or None (wrong shape, unknown, wrong secret,
    revoked). Its project may be suspended: the caller decides what that means."""
    # Only the shape new_token() makes reaches the database: a NUL or other stray
    # character in a header is a wrong credential (401), never a database error.
    if _TOKEN_SHAPE.fullmatch(token) is None:
        return None
    parts = token.split("_", 2)
    found = _CREDENTIAL.rows(None, prefix=parts[1], now=timezone.now())
    credential = found[0] if found else None
    if credential is None or not hmac.compare_digest(credential.secret_sha256, token_sha256(token)):
        return None
    return credential


class CredentialAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer att_<prefix>_<secret>``; the prefix finds the row."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ProjectPrincipal, Credential] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not token.strip():
            return None
        credential = credential_for_token(token.strip())
        if credential is None:
            raise exceptions.AuthenticationFailed()
        if credential.project.is_suspended:
            raise ProjectSuspended()
        return ProjectPrincipal(project=credential.project, credential=credential), credential

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="attest"'


class HasProjectCredential(permissions.BasePermission):
    def has_permission(self, request: Request, view) -> bool:
        if not isinstance(request.user, ProjectPrincipal):
            raise exceptions.NotAuthenticated()
        return True


class CredentialAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "citations.auth.CredentialAuthentication"
    name = "projectCredential"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A project credential."}
