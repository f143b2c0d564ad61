"""Fixtures for the fact ledger's tests: a project, its credential, and clients."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from citations.models import Project
from tests.citations.factories import CredentialFactory, ProjectFactory


@dataclass
class Ledger:
    """A project with a working credential and a client that sends it."""

    project: Project
    token: str
    client: APIClient

    def ingest(self, subject: str, *messages: tuple[str, str, str], role: str = "user"):
        """Post messages given as (message id, text, occurred_at) and return the response."""
        body = {
            "subject": subject,
            "messages": [
                {"id": mid, "role": role, "text": text, "occurred_at": at}
                for mid, text, at in messages
            ],
        }
        return self.client.post("/v1/observations", body, format="json")

    def resolve(self, fact_id, **extra):
        return self.client.post(
            "/v1/citations/resolve", {"id": str(fact_id), **extra}, format="json"
        )

    def recall(self, subject: str, **extra):
        return self.client.post("/v1/recall", {"subject": subject, **extra}, format="json")

    def ranked(self, subject: str, **extra) -> list[tuple[str, str, float]]:
        """Recall (with ``query`` among ``extra`` for a ranked one) and return the facts as
        (predicate, value, score), in the order given; the call must answer 200."""
        response = self.recall(subject, **extra)
        assert response.status_code == 200, response.content
        return [(f["predicate"], f["value"], f["score"]) for f in response.json()["facts"]]


def make_ledger() -> Ledger:
    project = ProjectFactory()
    _, token = CredentialFactory.with_token(project=project)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return Ledger(project=project, token=token, client=client)


@pytest.fixture
def ledger(db) -> Ledger:
    return make_ledger()


@pytest.fixture
def other_ledger(db) -> Ledger:
    return make_ledger()
