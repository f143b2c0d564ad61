"""Staff browse the ledger in the admin; no page shows a credential's secret or its hash."""

from __future__ import annotations

import pytest
from django.urls import reverse

from citations.models import Credential, Fact, Observation

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_superuser("staff", "staff@example.org", "pw")
    client.force_login(user)
    return client


def test_admin_lists_and_shows_ledger_objects(staff, ledger):
    ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    fact = Fact.objects.get()
    observation = Observation.objects.get()
    # Fact versions have no page of their own: they are shown inline on the fact.
    for name in [
        "project",
        "credential",
        "subject",
        "observation",
        "fact",
        "evidence",
        "auditevent",
        "generation",
        "retraction",
    ]:
        url = reverse(f"admin:citations_{name}_changelist")
        assert staff.get(url).status_code == 200, name
    page = staff.get(reverse("admin:citations_fact_change", args=[fact.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Dublin" in html
    assert str(observation.pk) in html or "m1" in html  # evidence inline
    assert (
        staff.get(reverse("admin:citations_observation_change", args=[observation.pk])).status_code
        == 200
    )


def test_no_admin_page_shows_the_secret(staff, ledger):
    credential = Credential.objects.get(project=ledger.project)
    pages = [
        reverse("admin:citations_credential_changelist"),
        reverse("admin:citations_credential_change", args=[credential.pk]),
        reverse("admin:citations_project_change", args=[ledger.project.pk]),
    ]
    for url in pages:
        html = staff.get(url).content.decode()
        assert credential.prefix in html
        assert credential.secret_sha256 not in html
        assert ledger.token not in html


def test_admin_suspension_and_revocation_go_through_audited_services(staff, ledger):
    from citations.models import AuditEvent, Project

    changelist = reverse("admin:citations_project_changelist")
    staff.post(changelist, {"action": "suspend", "_selected_action": [ledger.project.pk]})
    assert Project.objects.get(pk=ledger.project.pk).suspended_at is not None
    assert ledger.recall("u").status_code == 403
    staff.post(changelist, {"action": "reinstate", "_selected_action": [ledger.project.pk]})
    assert ledger.recall("u").status_code == 200

    credential = Credential.objects.get(project=ledger.project)
    staff.post(
        reverse("admin:citations_credential_changelist"),
        {"action": "revoke", "_selected_action": [credential.pk]},
    )
    assert ledger.recall("u").status_code == 401
    operations = list(
        AuditEvent.objects.filter(project=ledger.project, actor="staff:staff")
        .order_by("seq")
        .values_list("operation", flat=True)
    )
    assert operations == ["project.suspend", "project.reinstate", "credential.revoke"]


def test_staff_retract_from_the_admin_through_the_audited_service(staff, ledger):
    from citations.models import AuditEvent, Retraction

    response = ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z"))
    fact_id = response.json()["facts"][0]["id"]
    url = reverse("admin:citations_fact_changelist")
    asked = staff.post(url, {"action": "retract", "_selected_action": [fact_id]})
    assert asked.status_code == 200
    assert b"reason" in asked.content
    assert not Retraction.objects.exists()

    done = staff.post(
        url,
        {"action": "retract", "_selected_action": [fact_id], "apply": "1", "reason": "Spam."},
    )
    assert done.status_code == 302
    body = ledger.resolve(fact_id).json()
    assert body["status"] == "retracted"
    assert body["retraction"]["retracted_by"] == "staff:staff"
    assert body["retraction"]["reason"] == "Spam."
    event = AuditEvent.objects.get(operation="fact.retract")
    assert event.actor == "staff:staff" and fact_id in event.object_ids

    staff.post(
        url, {"action": "retract", "_selected_action": [fact_id], "apply": "1", "reason": "x"}
    )
    assert Retraction.objects.get().reason == "Spam."


def test_the_fact_page_stays_read_only_for_staff(staff, ledger):
    response = ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z"))
    fact_id = response.json()["facts"][0]["id"]
    page = staff.get(reverse("admin:citations_fact_change", args=[fact_id]))
    assert b'name="statement"' not in page.content


def test_the_project_list_shows_each_chain_status(staff, ledger):
    from citations.models import AuditEvent

    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z"))
    url = reverse("admin:citations_project_changelist")
    assert b"intact" in staff.get(url).content
    last = AuditEvent.objects.get(project=ledger.project)
    AuditEvent.objects.create(
        project=ledger.project,
        seq=2,
        operation="x",
        actor="x",
        created_at=last.created_at,
        prev_hash="0" * 64,
        hash="e" * 64,
    )
    assert b"BROKEN at event 2" in staff.get(url).content


def test_staff_declare_a_predicate_from_the_admin_through_the_audited_service(staff, ledger):
    from citations.models import AuditEvent, DeclaredPredicate

    add = reverse("admin:citations_declaredpredicate_add")
    form = {"project": ledger.project.pk, "name": "prefers_theme", "cardinality": "one"}
    response = staff.post(add, {**form, "description": "UI theme"})
    assert response.status_code == 302, response.content.decode()[:2000]
    declared = DeclaredPredicate.objects.get()
    assert (declared.name, declared.cardinality, declared.declared_by) == (
        "prefers_theme",
        "one",
        "staff:staff",
    )
    event = AuditEvent.objects.filter(operation="predicate.declare").get()
    assert (event.actor, event.object_ids) == ("staff:staff", [str(declared.pk)])
    # The API lists it beside the built-ins.
    names = [p["name"] for p in ledger.client.get("/v1/predicates").json()["predicates"]]
    assert names[-1] == "prefers_theme"
    # A built-in's name, or the same name with another cardinality, is refused on the form
    # and writes nothing.
    for refused in ({**form, "name": "lives_in"}, {**form, "cardinality": "many"}):
        page = staff.post(add, refused)
        assert page.status_code == 200 and "errornote" in page.content.decode()
    assert DeclaredPredicate.objects.count() == 1
    assert AuditEvent.objects.filter(operation="predicate.declare").count() == 1
    # Listed, and read-only once declared.
    assert staff.get(reverse("admin:citations_declaredpredicate_changelist")).status_code == 200
    change = staff.get(reverse("admin:citations_declaredpredicate_change", args=[declared.pk]))
    assert change.status_code == 200 and 'name="_save"' not in change.content.decode()
