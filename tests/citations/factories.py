"""factory-boy factories for the ledger's models."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import factory

from citations import models
from citations.auth import new_token
from citations.extract.extractor import EXTRACTOR_VERSION


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Project

    name = factory.Sequence(lambda n: f"project-{n}")


class CredentialFactory(factory.django.DjangoModelFactory):
    """Build with ``CredentialFactory.with_token()`` to get the secret as well."""

    class Meta:
        model = models.Credential

    project = factory.SubFactory(ProjectFactory)
    prefix = factory.LazyFunction(lambda: new_token()[1])
    secret_sha256 = factory.LazyFunction(lambda: "0" * 64)

    @classmethod
    def with_token(cls, **kwargs) -> tuple[models.Credential, str]:
        token, prefix, digest = new_token()
        return cls(prefix=prefix, secret_sha256=digest, **kwargs), token


class SubjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Subject

    project = factory.SubFactory(ProjectFactory)
    external_id = factory.Sequence(lambda n: f"user-{n}")


class ObservationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Observation

    class Params:
        text = "I live in Dublin."

    project = factory.SubFactory(ProjectFactory)
    subject = factory.SubFactory(SubjectFactory, project=factory.SelfAttribute("..project"))
    message_id = factory.Sequence(lambda n: f"m-{n}")
    role = "user"
    occurred_at = datetime(2026, 3, 4, 10, 11, 58, tzinfo=UTC)
    received_at = datetime(2026, 3, 4, 10, 12, tzinfo=UTC)
    content = factory.LazyAttribute(lambda o: o.text.encode("utf-8"))
    content_sha256 = factory.LazyAttribute(lambda o: hashlib.sha256(o.content).hexdigest())


class GenerationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Generation
        django_get_or_create = ("project", "kind", "extractor_version")

    project = factory.SubFactory(ProjectFactory)
    kind = "ingest"
    extractor_version = EXTRACTOR_VERSION


class FactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Fact

    project = factory.SubFactory(ProjectFactory)
    subject = factory.SubFactory(SubjectFactory, project=factory.SelfAttribute("..project"))
    predicate = "lives_in"
    functional = True
    value = "Dublin"
    value_key = factory.LazyAttribute(lambda o: o.value.casefold())
    statement = "I live in Dublin."
    source_role = "user"
    generation = factory.SubFactory(GenerationFactory, project=factory.SelfAttribute("..project"))
    created_at = datetime(2026, 3, 4, 10, 12, tzinfo=UTC)


class FactVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.FactVersion

    fact = factory.SubFactory(FactFactory)
    seq = 1
    project = factory.SelfAttribute("fact.project")
    subject = factory.SelfAttribute("fact.subject")
    predicate = factory.SelfAttribute("fact.predicate")
    functional = factory.SelfAttribute("fact.functional")
    valid_from = datetime(2026, 3, 1, tzinfo=UTC)
    known_from = datetime(2026, 3, 4, 10, 12, tzinfo=UTC)
    status = "current"


class EvidenceFactory(factory.django.DjangoModelFactory):
    """Evidence over ``observation.content[byte_start:byte_end]`` (default: all of it)."""

    class Meta:
        model = models.Evidence

    fact = factory.SubFactory(FactFactory)
    project = factory.SelfAttribute("fact.project")
    observation = factory.SubFactory(
        ObservationFactory,
        project=factory.SelfAttribute("..fact.project"),
        subject=factory.SelfAttribute("..fact.subject"),
    )
    byte_start = 0
    byte_end = factory.LazyAttribute(lambda o: len(o.observation.content))
    quote_sha256 = factory.LazyAttribute(
        lambda o: hashlib.sha256(
            bytes(o.observation.content)[o.byte_start : o.byte_end]
        ).hexdigest()
    )
    extractor_version = EXTRACTOR_VERSION
    created_at = datetime(2026, 3, 4, 10, 12, tzinfo=UTC)
