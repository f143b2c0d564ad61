"""Declared predicates: a project names its own predicates, with their cardinality.

The built-in predicates are the table in :mod:`citations.extract.predicates`; a project
may add its own beside them (never redefine one). Every write names a predicate the
project knows, and its cardinality decides supersession exactly as a built-in's does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from attest.errors import AttestError, InvalidRequest
from citations.extract.predicates import BUILTIN_PREDICATES, CARDINALITIES, builtin_predicate
from citations.models import DeclaredPredicate, Project
from citations.services.audit import audit_record
from citations.vocabulary import BUILTIN_SYNONYMS

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
NAME_PATTERN = "^[a-z][a-z0-9_]{0,63}$"
NAME_RULE = (
    f"must match {NAME_PATTERN} (a lower-case letter, then up to 63 lower-case letters, "
    "digits or underscores)."
)
DESCRIPTION_MAX_CHARS = 500
MAX_SYNONYMS = 20
SYNONYM_MAX_CHARS = 60
DECLARE_HINT = 'declare it first with POST /v1/predicates {"name", "cardinality"}'


class PredicateConflict(AttestError):
    status_code = 409
    code = "predicate_conflict"
    message = "A predicate with this name already exists with another definition."


@dataclass(frozen=True)
class PredicateView:
    name: str
    cardinality: str
    builtin: bool
    description: str
    synonyms: tuple[str, ...] = ()


def _view(row: DeclaredPredicate) -> PredicateView:
    synonyms = tuple(row.synonyms.splitlines()) if row.synonyms else ()
    return PredicateView(row.name, row.cardinality, False, row.description, synonyms)


def predicates_list(*, project: Project) -> list[PredicateView]:
    """The built-ins in their table's order, then the project's own by name."""
    builtins = [
        PredicateView(p.name, p.cardinality, True, p.description, BUILTIN_SYNONYMS.get(p.name, ()))
        for p in BUILTIN_PREDICATES
    ]
    declared = DeclaredPredicate.objects.for_project(project).order_by("name")
    return builtins + [_view(row) for row in declared]


def predicate_cardinality(*, project: Project, name: str, field: str = "predicate") -> str:
    """The cardinality of a predicate the project knows; 400 naming how to declare one."""
    builtin = builtin_predicate(name)
    if builtin is not None:
        return builtin.cardinality
    row = DeclaredPredicate.objects.for_project(project).filter(name=name).first()
    if row is None:
        raise InvalidRequest(
            f"{field}: {name!r} is neither a built-in predicate nor one this project "
            f"declared; {DECLARE_HINT} (GET /v1/predicates lists them).",
            field=field,
        )
    return row.cardinality


def _validated(name: str, cardinality: str, description: str, synonyms: Sequence[str] = ()) -> None:
    if not NAME_RE.fullmatch(name):
        raise InvalidRequest(f"name: {NAME_RULE}", field="name")
    if cardinality not in CARDINALITIES:
        raise InvalidRequest('cardinality: "one" or "many".', field="cardinality")
    if len(description) > DESCRIPTION_MAX_CHARS:
        raise InvalidRequest(
            f"description: at most {DESCRIPTION_MAX_CHARS} characters.", field="description"
        )
    if len(synonyms) > MAX_SYNONYMS:
        raise InvalidRequest(f"synonyms: at most {MAX_SYNONYMS}.", field="synonyms")
    for index, synonym in enumerate(synonyms):
        # One a line in storage: a line break would split one synonym into two.
        if not synonym.strip() or len(synonym) > SYNONYM_MAX_CHARS or "\n" in synonym:
            raise InvalidRequest(
                f"synonyms[{index}]: a word or phrase of 1 to {SYNONYM_MAX_CHARS} characters "
                "on one line.",
                field=f"synonyms[{index}]",
            )


def predicate_check(
    *, name: str, cardinality: str, description: str = "", synonyms: Sequence[str] = ()
) -> None:
    """What a declaration must hold before anything is read or written (the admin's form
    asks it too): a well-formed name and cardinality, and not a built-in's name."""
    _validated(name, cardinality, description, synonyms)
    builtin = builtin_predicate(name)
    if builtin is not None:
        raise PredicateConflict(
            f"{name!r} is a built-in predicate (cardinality {builtin.cardinality!r}); "
            "choose another name.",
            details={"name": name, "builtin": True, "cardinality": builtin.cardinality},
        )


def predicate_declare(
    *,
    project: Project,
    name: str,
    cardinality: str,
    description: str = "",
    synonyms: Sequence[str] = (),
    actor: str,
    request_id: str = "",
) -> tuple[PredicateView, bool]:
    """Declare a predicate; (the predicate, whether it is new). Audited as ``predicate.declare``.

    Declaring the same name with the same cardinality again returns the stored predicate
    unchanged (its first description and synonyms stay: its facts were indexed with
    them); a built-in's name, or a declared name with another cardinality, is
    ``409 predicate_conflict``.
    """
    predicate_check(name=name, cardinality=cardinality, description=description, synonyms=synonyms)
    with transaction.atomic():
        found = DeclaredPredicate.objects.for_project(project).filter(name=name).first()
        created = found is None
        if found is not None:
            existing = found
        else:
            try:
                with transaction.atomic():
                    existing = DeclaredPredicate.objects.create(
                        project=project,
                        name=name,
                        cardinality=cardinality,
                        description=description,
                        synonyms="\n".join(synonym.strip() for synonym in synonyms),
                        declared_by=actor,
                        created_at=timezone.now(),
                    )
            except IntegrityError:  # declared at the same moment by another request
                existing = DeclaredPredicate.objects.for_project(project).get(name=name)
                created = False
        if existing.cardinality != cardinality:
            raise PredicateConflict(
                f"{name!r} is already declared with cardinality {existing.cardinality!r}.",
                details={"name": name, "builtin": False, "cardinality": existing.cardinality},
            )
        audit_record(
            project=project,
            operation="predicate.declare",
            actor=actor,
            object_ids=[str(existing.pk)],
            request_id=request_id,
        )
    return _view(existing), created
