"""Staff see the Crossref cache and every lookup, read-only; the rows keep their invariants."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from tests.verification.crossref import works
from verification.crossref.lookups import crossref_for_pages
from verification.models import CrossrefAnswer, CrossrefLookup

pytestmark = pytest.mark.django_db


def test_staff_browse_the_cache_and_filter_retracted_works(admin_client, crossref):
    crossref_for_pages([works.RETRACTED, works.CLEAN], tier="paid")
    response = admin_client.get("/admin/verification/crossrefanswer/?retracted__exact=1")
    assert response.status_code == 200
    assert works.RETRACTED.encode() in response.content
    assert works.CLEAN.encode() not in response.content


def test_staff_filter_skipped_lookups_by_reason(admin_client, crossref):
    crossref_for_pages([works.CLEAN], tier="paid")
    crossref.refuse_with_500()
    crossref_for_pages([works.CONCERN], tier="paid")
    response = admin_client.get("/admin/verification/crossreflookup/?reason__exact=unavailable")
    assert response.status_code == 200
    # A DOI may wrap after "/" and "." in its column (<wbr>); the text read is the DOI.
    shown = response.content.replace(b"<wbr>", b"")
    assert works.CONCERN.encode() in shown
    assert works.CLEAN.encode() not in shown


def test_the_crossref_admin_is_read_only(admin_client, crossref):
    crossref_for_pages([works.CLEAN], tier="paid")
    for model, row in (
        ("crossrefanswer", CrossrefAnswer.objects.get()),
        ("crossreflookup", CrossrefLookup.objects.get()),
    ):
        assert admin_client.get(f"/admin/verification/{model}/add/").status_code == 403
        delete = admin_client.post(f"/admin/verification/{model}/{row.pk}/delete/", {"post": "yes"})
        assert delete.status_code == 403
    assert CrossrefAnswer.objects.count() == CrossrefLookup.objects.count() == 1


def test_a_skipped_lookup_must_say_why_and_an_answer_must_not():
    values = {"doi": "10.5555/x", "tier": "paid", "latency_ms": 1.0}
    with pytest.raises(IntegrityError), transaction.atomic():
        CrossrefLookup.objects.create(status="skipped", reason="", **values)
    with pytest.raises(IntegrityError), transaction.atomic():
        CrossrefLookup.objects.create(status="found", reason="busy", **values)


def test_a_found_answer_carries_its_work_and_a_not_found_one_none():
    now = timezone.now()
    times = {"fetched_at": now, "expires_at": now + timedelta(days=1)}
    with pytest.raises(IntegrityError), transaction.atomic():
        CrossrefAnswer.objects.create(doi="10.5555/a", status="found", work=None, **times)
    with pytest.raises(IntegrityError), transaction.atomic():
        CrossrefAnswer.objects.create(
            doi="10.5555/b", status="not_found", work={"title": "x"}, **times
        )
