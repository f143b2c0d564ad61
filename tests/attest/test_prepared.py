"""Querysets compiled once per shape: the same rows as Django's own evaluation, the SQL
compiled once, and a shape whose argument Django transforms never frozen into the cache."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, connection
from django.db.models.signals import post_save
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from attest.prepared import PreparedQuery, created, listed, one_of, saved
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


# Writes built once: created() and saved() against Django's own create() and save().


@pytest.fixture
def write_compilations(monkeypatch):
    """How many times Django compiled an INSERT or an UPDATE."""
    from django.db.models.sql.compiler import SQLInsertCompiler, SQLUpdateCompiler

    count = {"n": 0}
    for compiler in (SQLInsertCompiler, SQLUpdateCompiler):
        real = compiler.as_sql

        def as_sql(self, *args, _real=real, **kwargs):
            count["n"] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(compiler, "as_sql", as_sql)
    return count


def _hold_row(pk: int) -> dict:
    from billing.models import CreditHold

    row = CreditHold.objects.filter(pk=pk).values().get()
    return {k: v for k, v in row.items() if k not in ("id", "created_at", "updated_at")}


def test_created_writes_django_s_row_and_compiles_no_insert(write_compilations):
    from billing.models import CreditAccount, CreditHold

    account = CreditAccount.objects.create(owner="prepared-owner", balance=5)
    lease = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    values = {"route": "verify_quote", "amount": 7, "lease_until": lease, "request_id": "r"}
    by_django = CreditHold.objects.create(account=account, **values)
    write_compilations["n"] = 0
    ours = [created(CreditHold, account=account, **values) for _ in range(3)]
    assert write_compilations["n"] == 0
    assert [hold.pk for hold in ours] == list(range(by_django.pk + 1, by_django.pk + 4))
    assert all(not hold._state.adding and hold._state.db == "default" for hold in ours)
    assert ours[0].created_at is not None and ours[0].updated_at is not None
    assert {str(_hold_row(hold.pk)) for hold in ours} == {str(_hold_row(by_django.pk))}
    assert CreditHold.objects.get(pk=ours[0].pk).created_at == ours[0].created_at


def test_created_keeps_a_given_key_bytes_and_json():
    from billing.models import PaidAnswer, PaymentClaim

    claim = PaymentClaim.objects.create(
        route="verify/quote",
        network="eip155:84532",
        asset="0xasset",
        payer="0xpayer",
        nonce="0xnonce",
        amount="10",
        valid_before=0,
        state="settled",
    )
    answer = created(
        PaidAnswer,
        claim=claim,
        status_code=200,
        content_type="application/json",
        body=b"\x00{}\xff",
        headers={"X-A": "b"},
    )
    stored = PaidAnswer.objects.get(pk=claim.pk)
    assert answer.pk == claim.pk == stored.claim_id
    assert (bytes(stored.body), stored.headers, stored.payment_response) == (
        b"\x00{}\xff",
        {"X-A": "b"},
        "",
    )
    assert PaymentClaim.objects.get(pk=claim.pk).answer == stored


def test_saved_updates_the_named_fields_sets_auto_now_and_refuses_a_missing_row(
    write_compilations,
):
    from billing.models import CreditAccount, CreditHold

    account = CreditAccount.objects.create(owner="prepared-saved", balance=5)
    hold = CreditHold.objects.create(
        account=account, route="verify_quote", amount=3, lease_until=datetime.now(UTC)
    )
    before = hold.updated_at
    hold.state, hold.outcome, hold.lease_until, hold.route = "drawn", "charged", None, "other"
    write_compilations["n"] = 0
    saved(hold, ["state", "outcome", "lease_until", "updated_at"])
    assert write_compilations["n"] == 0
    stored = CreditHold.objects.get(pk=hold.pk)
    assert (stored.state, stored.outcome, stored.lease_until) == ("drawn", "charged", None)
    assert stored.route == "verify_quote"  # not named: not written
    assert stored.updated_at == hold.updated_at > before
    gone = CreditHold(pk=hold.pk + 1000, account=account, route="x", amount=1)
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        saved(gone, ["outcome"])


def test_a_model_with_a_save_receiver_is_saved_by_django():
    from billing.models import CreditAccount

    seen = []

    def receiver(sender, instance, created, **kwargs):
        seen.append((instance.owner, created))

    post_save.connect(receiver, sender=CreditAccount)
    try:
        account = created(CreditAccount, owner="heard", balance=1)
        account.balance = 2
        saved(account, ["balance"])
    finally:
        post_save.disconnect(receiver, sender=CreditAccount)
    assert seen == [("heard", True), ("heard", False)]
    assert CreditAccount.objects.get(owner="heard").balance == 2
