"""Projects and their credentials: create, revoke, suspend (the changes are audited)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from attest.errors import NotFound
from citations.auth import new_token
from citations.models import Credential, Project, Subject
from citations.services.audit import audit_record


@transaction.atomic
def project_create(*, name: str) -> tuple[Project, str]:
    """A new project and its first credential; the token is returned once, never stored."""
    project = Project.objects.create(name=name)
    _, token = credential_create(project=project, label="initial")
    return project, token


def credential_create(*, project: Project, label: str = "") -> tuple[Credential, str]:
    token, prefix, digest = new_token()
    credential = Credential.objects.create(
        project=project, prefix=prefix, secret_sha256=digest, label=label
    )
    return credential, token


@transaction.atomic
def credential_revoke(*, credential: Credential, actor: str) -> None:
    revoked = Credential.objects.filter(pk=credential.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if revoked:
        audit_record(
            project=credential.project,
            operation="credential.revoke",
            actor=actor,
            object_ids=[credential.prefix],
        )


@transaction.atomic
def project_set_suspended(*, project: Project, suspended: bool, actor: str) -> None:
    """Suspend a project (its credentials answer 403) or reinstate it; audited."""
    rows = Project.objects.filter(pk=project.pk, suspended_at__isnull=suspended)
    if rows.update(suspended_at=timezone.now() if suspended else None):
        audit_record(
            project=project,
            operation="project.suspend" if suspended else "project.reinstate",
            actor=actor,
            object_ids=[str(project.pk)],
        )


def subject_get_live(*, project: Project, subject_id: str) -> Subject:
    """The project's subject of that ID; an unknown, erased or other project's one is a 404."""
    subject = (
        Subject.objects.for_project(project)
        .filter(external_id=subject_id, erased_at__isnull=True)
        .first()
    )
    if subject is None:
        raise NotFound("No subject with this ID exists in this project.")
    return subject
