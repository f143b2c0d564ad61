"""Projects as owners of prepaid credit: what billing's balances are keyed by.

Billing sits below this app and never imports it; it calls the three functions below, in
this module named when the app loads (``CitationsConfig.ready``): a Bearer token to the
owner key of its project, a new project opened by a paid top-up, and a key back to the
project's name.
"""

from __future__ import annotations

import secrets

from django.db import transaction

from billing.owners import OpenedOwner
from citations.auth import credential_for_token
from citations.models import Project
from citations.services import project_create

OWNER_PREFIX = "project:"


def project_owner(project: Project) -> str:
    return f"{OWNER_PREFIX}{project.pk}"


def owner_resolve(token: str) -> str | None:
    """The owner key of a live credential whose project is not suspended, else None."""
    credential = credential_for_token(token)
    if credential is None or credential.project.is_suspended:
        return None
    return project_owner(credential.project)


def owner_open() -> OpenedOwner:
    """Self-serve sign-up by payment: a new project, its first credential shown once."""
    with transaction.atomic():
        project, token = project_create(name=f"credit-{secrets.token_hex(6)}")
    return OpenedOwner(key=project_owner(project), name=project.name, credential=token)


def owner_name(owner: str) -> str:
    pk = owner.removeprefix(OWNER_PREFIX)
    name = Project.objects.filter(pk=pk).values_list("name", flat=True).first()
    return name or owner
