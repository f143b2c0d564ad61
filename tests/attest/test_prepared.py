"""Querysets compiled once per shape: the same rows as Django's own evaluation, the SQL
compiled once, and a shape whose argument Django transforms never frozen into the cache."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from attest.prepared import PreparedQuery, listed, one_of
from citations.models import Observation, Subject
from tests.citations.factories import ObservationFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def _subjects(shape, *, project: int, since: datetime, name: str | None = None):
    rows = Subject.objects.filter(project_id=project, created_at__gte=since)
    if shape == "named":
        rows = rows.filter(external_id=name)
    elif shape == "containing":
        rows = rows.filter(external_id__icontains=name)
    return rows.select_related("project").order_by("external_id")


@pytest.fixture
def compilations(monkeypatch):
    """How many times Django compiled a SELECT."""
    real = SQLCompiler.as_sql
    count = {"n": 0}

    def as_sql(self, *args, **kwargs):
        count["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", as_sql)
    return count


def test_a_shape_is_compiled_once_and_gives_django_s_rows_for_every_value(compilations):
    first, second = ProjectFactory(), ProjectFactory()
    for project, names in ((first, ["a", "b", "c"]), (second, ["b", "d"])):
        for name in names:
            Subject.objects.create(project=project, external_id=name)
    since = datetime(2000, 1, 1, tzinfo=UTC)
    prepared = PreparedQuery(_subjects, project=int, since=datetime, name=str)
    calls = [
        ("all", {"project": first.pk, "since": since}),
        ("all", {"project": second.pk, "since": since}),
        ("named", {"project": second.pk, "since": since, "name": "d"}),
        ("named", {"project": first.pk, "since": since, "name": "d"}),
        ("all", {"project": first.pk, "since": datetime(2999, 1, 1, tzinfo=UTC)}),
    ]
    expected = [list(_subjects(shape, **values)) for shape, values in calls]
    with CaptureQueriesContext(connection) as django_sent:
        for shape, values in calls:
            list(_subjects(shape, **values))
    compilations["n"] = 0
    with CaptureQueriesContext(connection) as prepared_sent:
        got = [prepared.rows(shape, **values) for shape, values in calls]
    assert [[s.pk for s in rows] for rows in got] == [[s.pk for s in rows] for rows in expected]
    assert [len(rows) for rows in got] == [3, 2, 1, 0, 0]
    assert got[0][0].project == first  # select_related objects are built as Django builds them
    assert [q["sql"] for q in prepared_sent] == [q["sql"] for q in django_sent]
    assert compilations["n"] == 4  # two shapes, each compiled twice (with two sets of markers)
    prepared.rows("all", project=first.pk, since=since)
    assert compilations["n"] == 4


def test_an_argument_django_transforms_is_compiled_each_time(compilations):
    project = ProjectFactory()
    for name in ["tea", "coffee", "green tea"]:
        Subject.objects.create(project=project, external_id=name)
    since = datetime(2000, 1, 1, tzinfo=UTC)
    prepared = PreparedQuery(_subjects, project=int, since=datetime, name=str)
    # icontains makes a LIKE pattern of the name: a cached shape would keep the first one.
    found = [
        [
            s.external_id
            for s in prepared.rows("containing", project=project.pk, since=since, name=n)
        ]
        for n in ["tea", "off", "TEA"]
    ]
    assert found == [["green tea", "tea"], ["coffee"], ["green tea", "tea"]]


def _listed_subjects(vendor, *, project: int, names: str):
    return Subject.objects.filter(project_id=project).filter(
        one_of(vendor, '"citations_subject"."external_id"', "text", names)
    )


def test_a_list_in_one_parameter_is_compiled_once_for_any_count_and_any_text(compilations):
    project = ProjectFactory()
    # Characters a list's own syntax uses (JSON's, PostgreSQL array literals') and others.
    names = ["a,b", "{c}", 'say "hi"', "back\\slash", "it's", "Zürich 東京", "NULL", ""]
    made = {name: Subject.objects.create(project=project, external_id=name) for name in names}
    Subject.objects.create(project=project, external_id="not asked for")
    prepared = PreparedQuery(_listed_subjects, project=int, names=str)
    vendor = connection.vendor
    for count in (0, 1, 3, len(names)):
        asked = names[:count]
        rows = prepared.rows(vendor, project=project.pk, names=listed(vendor, asked))
        assert sorted(row.pk for row in rows) == sorted(made[name].pk for name in asked)
    assert compilations["n"] == 2  # the shape's two compilations (attest.prepared), once


def test_listed_uuids_match_as_the_backend_stores_them():
    project = ProjectFactory()
    observations = [ObservationFactory(project=project) for _ in range(3)]
    vendor = connection.vendor
    asked = listed(vendor, [observations[0].pk, observations[2].pk])
    found = Observation.objects.filter(
        one_of(vendor, '"citations_observation"."id"', "uuid", asked)
    )
    assert sorted(row.pk for row in found) == sorted([observations[0].pk, observations[2].pk])
