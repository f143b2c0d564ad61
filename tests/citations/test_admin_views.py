"""What staff and auditors see of the ledger: quoted words next to offsets, facts filtered by
status, subject and predicate, the audit chain's state, and the timeline pictures."""

from __future__ import annotations

from datetime import UTC, datetime

import lxml.html
import pytest
from django.db import connection
from django.urls import reverse

from citations.extract.intervals import STATUSES
from citations.extract.timeline import MARKS, STATUS_COLOURS, Bar, timeline_svg
from citations.models import AuditEvent, Evidence, Fact, FactVersion, Observation

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_superuser("staff", "staff@example.org", "pw")
    client.force_login(user)
    return client


def _moved(ledger):
    """Galway, then Dublin (which supersedes it), then a like: three facts of one subject.

    Galway comes first in a request of its own: what one request believes only between
    two of its messages has an empty known interval and is not stored as a version.
    """
    assert (
        ledger.ingest("user-1", ("m1", "I live in Galway.", "2025-06-01T09:00:00Z")).status_code
        == 201
    )
    response = ledger.ingest(
        "user-1",
        ("m2", "Well. I moved to Dublin in March.", "2026-03-04T10:11:58Z"),
        ("m3", "I like sea swimming.", "2026-03-05T08:00:00Z"),
    )
    assert response.status_code == 201
    return {fact.value: fact for fact in Fact.objects.all()}


def _tree(response) -> lxml.html.HtmlElement:
    assert response.status_code == 200
    return lxml.html.fromstring(response.content.decode())


def _changelist_values(staff, query: str) -> list[str]:
    tree = _tree(staff.get(reverse("admin:citations_fact_changelist") + query))
    return sorted(td.text_content() for td in tree.xpath("//td[@class='field-value']"))


# --- evidence with its words ---------------------------------------------------------------


def test_evidence_shows_the_quoted_words_read_from_the_bytes_next_to_the_offsets(staff, ledger):
    facts = _moved(ledger)
    dublin = facts["Dublin"]
    tree = _tree(staff.get(reverse("admin:citations_fact_change", args=[dublin.pk])))
    row = tree.xpath("//tr[td[contains(@class, 'field-words')]]")[0]
    cells = {td.get("class").split()[0]: td.text_content().strip() for td in row.xpath("./td")}
    assert cells["field-words"] == "I moved to Dublin in March"
    assert (cells["field-byte_start"], cells["field-byte_end"]) == ("6", "32")
    evidence = Evidence.objects.get(fact=dublin)
    listed = _tree(staff.get(reverse("admin:citations_evidence_changelist")))
    assert "I moved to Dublin in March" in listed.text_content()
    assert str(evidence.byte_start) in listed.text_content()


def test_evidence_whose_bytes_changed_says_so_instead_of_showing_words(staff, ledger):
    facts = _moved(ledger)
    evidence = Evidence.objects.get(fact=facts["Galway"])
    # The stored message bytes changed under the evidence (evidence rows themselves are
    # append-only): the admin must not show the bytes now there as if they were the evidence.
    observation = evidence.observation
    tampered = bytes(observation.content).replace(b"Galway", b"Gdansk")
    type(observation).objects.filter(pk=observation.pk).update(content=tampered)
    html = staff.get(reverse("admin:citations_evidence_change", args=[evidence.pk]))
    text = _tree(html).text_content()
    assert "do not match this evidence" in text
    assert "Gdansk" not in text.split("quoted words")[-1].split("Byte start")[0]


# --- facts: filters and search -------------------------------------------------------------


def test_facts_filter_by_status(staff, ledger):
    _moved(ledger)
    assert _changelist_values(staff, "?status=current") == ["Dublin", "sea swimming"]
    assert _changelist_values(staff, "?status=validity_closed") == ["Galway"]
    assert _changelist_values(staff, "?status=retracted") == []
    tree = _tree(staff.get(reverse("admin:citations_fact_changelist")))
    offered = tree.xpath("//details[@data-filter-title='status']//a/text()")
    assert [o.strip() for o in offered][1:] == list(STATUSES)


def test_facts_filter_by_subject_and_predicate_and_search(staff, ledger):
    _moved(ledger)
    ledger.ingest("user-2", ("n1", "I live in Oslo.", "2026-01-01T09:00:00Z"))
    assert _changelist_values(staff, "?subject=user-2") == ["Oslo"]
    assert _changelist_values(staff, "?predicate=lives_in&subject=user-1") == ["Dublin", "Galway"]
    assert _changelist_values(staff, "?q=swimming") == ["sea swimming"]
    assert _changelist_values(staff, "?q=user-2") == ["Oslo"]
    # The subject box keeps the other filters when it is submitted.
    tree = _tree(staff.get(reverse("admin:citations_fact_changelist") + "?predicate=lives_in"))
    form = tree.xpath("//form[@class='input-filter']")[0]
    assert form.xpath(".//input[@type='hidden']/@name") == ["predicate"]
    assert form.xpath(".//input[@type='text']/@name") == ["subject"]


def test_fact_list_shows_the_status_and_a_short_id(staff, ledger):
    facts = _moved(ledger)
    tree = _tree(staff.get(reverse("admin:citations_fact_changelist") + "?q=Galway"))
    assert tree.xpath("//td[@class='field-status']/text()") == ["validity_closed"]
    assert tree.xpath("//th[@class='field-short_id']//a/text()") == [str(facts["Galway"].pk)[:8]]


def test_fact_list_is_newest_first_whatever_the_ids(staff, ledger):
    facts = list(_moved(ledger).values())
    # Times that run against the IDs' order: the largest UUID is the oldest fact.
    by_id = sorted(facts, key=lambda fact: fact.pk)
    for minute, fact in enumerate(reversed(by_id)):
        Fact.objects.filter(pk=fact.pk).update(
            created_at=datetime(2026, 3, 4, 10, minute, tzinfo=UTC)
        )
    tree = _tree(staff.get(reverse("admin:citations_fact_changelist")))
    listed = tree.xpath("//th[@class='field-short_id']//a/text()")
    assert listed == [str(fact.pk)[:8] for fact in by_id]


def test_a_facts_page_says_how_many_values_its_predicate_holds(staff, ledger):
    facts = _moved(ledger)
    page = _tree(staff.get(reverse("admin:citations_fact_change", args=[facts["Dublin"].pk])))
    text = " ".join(page.text_content().split())
    assert "Values at a time: one (cardinality one: a new value supersedes" in text
    assert "Functional" not in text
    page = _tree(staff.get(reverse("admin:citations_fact_change", args=[facts["sea swimming"].pk])))
    assert "Values at a time: many (cardinality many" in " ".join(page.text_content().split())


def test_the_admin_index_names_its_lists_in_plain_english(staff):
    text = " ".join(_tree(staff.get(reverse("admin:index"))).text_content().split())
    assert "Log leaves" in text and "Refusal tallies" in text
    assert "leafs" not in text.lower() and "tallys" not in text.lower()


# --- the audit chain -----------------------------------------------------------------------


def test_project_pages_show_whether_the_audit_chain_is_intact(staff, ledger):
    _moved(ledger)
    url = reverse("admin:citations_project_changelist")
    assert _tree(staff.get(url)).xpath("//td[@class='field-audit_chain']//text()") == ["intact"]
    # Break the chain under the ORM's append-only rule, as an intruder with SQL would.
    table = AuditEvent._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        else:
            cursor.execute("DROP TRIGGER IF EXISTS citations_auditevent_no_update")
        cursor.execute(f"UPDATE {table} SET source_count = source_count + 1")
    page = _tree(staff.get(reverse("admin:citations_project_change", args=[ledger.project.pk])))
    [broken] = page.xpath("//*[@class='chain-broken']/text()")
    assert broken.startswith("BROKEN at event 1:")


# --- timelines -----------------------------------------------------------------------------


def _versions(svg_root) -> list:
    return svg_root.findall(f".//{SVG}g[@class='version']")


def _svg_in(response):
    html = response.content.decode()
    start = html.rindex("<svg", 0, html.index('class="timeline"'))
    end = html.index("</svg>", start) + len("</svg>")
    from lxml import etree

    return etree.fromstring(html[start:end].encode())


def test_subject_timeline_draws_each_version_with_supersession_marked(staff, ledger):
    _moved(ledger)
    subject = Fact.objects.get(value="Dublin").subject
    svg = _svg_in(staff.get(reverse("admin:citations_subject_change", args=[subject.pk])))
    panels = svg.findall(f".//{SVG}g[@class='panel']")
    assert [p.get("data-row") for p in panels] == ["likes", "lives_in"]
    versions = _versions(svg)
    # Galway: believed open, then (knowledge closed) replaced by a version closed in validity.
    assert len(versions) == FactVersion.objects.count() == 4
    by_status = {v.get("data-status") for v in versions}
    (galway,) = [
        v
        for v in versions
        if "Galway" in v.findtext(f"{SVG}title") and v.get("data-status") == "validity_closed"
    ]
    dublin = next(v for v in versions if "Dublin" in v.findtext(f"{SVG}title"))
    assert galway.get("data-status") == "validity_closed"
    assert galway.find(f"{SVG}line[@class='mark mark-superseded']") is not None
    assert dublin.find(f"{SVG}line[@class='open-valid']") is not None
    # Valid time runs across: Galway ends where Dublin starts, the superseded edge is its right.
    g_rect, d_rect = galway.find(f"{SVG}rect"), dublin.find(f"{SVG}rect")
    g_right = float(g_rect.get("x")) + float(g_rect.get("width"))
    assert abs(g_right - float(d_rect.get("x"))) < 0.2
    mark = galway.find(f"{SVG}line[@class='mark mark-superseded']")
    assert float(mark.get("x1")) == pytest.approx(g_right, abs=0.2)
    assert by_status == {"validity_closed", "current", "knowledge_closed"}


def test_fact_timeline_is_on_the_fact_page(staff, ledger):
    facts = _moved(ledger)
    svg = _svg_in(staff.get(reverse("admin:citations_fact_change", args=[facts["Galway"].pk])))
    statuses = [v.get("data-status") for v in _versions(svg)]
    assert statuses == ["knowledge_closed", "validity_closed"]
    assert "Timeline of fact" in svg.get("aria-label")


NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _bar(status="current", **changes) -> Bar:
    values = {
        "row": "lives_in",
        "label": "Dublin",
        "status": status,
        "valid_from": datetime(2026, 3, 1, tzinfo=UTC),
        "valid_until": None,
        "known_from": datetime(2026, 3, 4, tzinfo=UTC),
        "known_until": None,
    }
    return Bar(**{**values, **changes})


def _svg(bars):
    from lxml import etree

    return etree.fromstring(timeline_svg(bars, now=NOW, title="t").encode())


def test_known_time_goes_up_and_a_closed_known_interval_is_drawn_below_its_successor():
    old = _bar(
        "knowledge_closed",
        label="Dublin v1",
        known_until=datetime(2026, 4, 1, tzinfo=UTC),
    )
    new = _bar(known_from=datetime(2026, 4, 1, tzinfo=UTC), label="Dublin v2")
    first, second = (v.find(f"{SVG}rect") for v in _versions(_svg([old, new])))
    # SVG y grows downwards: the later known interval sits above (smaller y).
    assert float(second.get("y")) + float(second.get("height")) == pytest.approx(
        float(first.get("y")), abs=0.2
    )


def test_retraction_and_reinterpretation_mark_the_top_edge():
    closed = datetime(2026, 5, 1, tzinfo=UTC)
    bars = [
        _bar("retracted", known_until=closed, links=("retracted",)),
        _bar("reinterpreted", row="likes", known_until=closed, links=("reinterpreted",)),
    ]
    for version in _versions(_svg(bars)):
        rect = version.find(f"{SVG}rect")
        (mark,) = version.findall(f"{SVG}line[@stroke-width='4']")
        assert float(mark.get("y1")) == float(mark.get("y2")) == pytest.approx(float(rect.get("y")))


def test_every_status_has_a_colour_and_every_mark_an_edge():
    assert set(STATUS_COLOURS) == set(STATUSES)
    assert {mark.edge for mark in MARKS.values()} <= {"right", "top"}


def test_a_status_the_picture_does_not_know_is_drawn_and_named():
    svg = timeline_svg([_bar("disputed")], now=NOW, title="t")
    assert "disputed" in svg and 'data-status="disputed"' in svg


def test_text_in_the_picture_is_escaped():
    svg = timeline_svg([_bar(label="<script>x</script>", title="a & b")], now=NOW, title="<t>")
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg and "a &amp; b" in svg
    _svg([_bar(label="<b>")])  # still well-formed XML


def test_an_empty_timeline_says_so():
    assert "No fact versions" in timeline_svg([], now=NOW, title="t")


def test_observation_admin_still_reads(staff, ledger):
    _moved(ledger)
    observation = Observation.objects.get(message_id="m2")
    html = staff.get(reverse("admin:citations_observation_change", args=[observation.pk]))
    assert "I moved to Dublin in March." in html.content.decode()


def _ticks_of(svg) -> list[tuple[float, str]]:
    return [(float(t.get("x")), t.text) for t in svg.iter(f"{SVG}text") if t.get("class") == "tick"]


def test_valid_time_is_ticked_at_every_new_year_and_each_tick_names_its_own_year():
    """A fact valid from January 2024 starts on the tick labelled 2024, none is skipped."""
    bars = [
        _bar(label="Lisbon", valid_from=datetime(2023, 6, 1, tzinfo=UTC)),
        _bar(row="works_at", label="Acme", valid_from=datetime(2024, 1, 1, tzinfo=UTC)),
    ]
    svg = _svg(bars)
    panels = svg.findall(f".//{SVG}g[@class='panel']")
    for panel in panels:
        assert [label for _, label in _ticks_of(panel)] == ["2024", "2025", "2026"]
    acme = next(v for v in _versions(svg) if "Acme" in v.findtext(f"{SVG}title"))
    tick_2024 = dict((label, x) for x, label in _ticks_of(panels[1]))["2024"]
    assert float(acme.find(f"{SVG}rect").get("x")) == pytest.approx(tick_2024, abs=0.2)


def test_a_span_of_months_is_ticked_on_the_first_of_months_through_the_new_year():
    svg = _svg([_bar(valid_from=datetime(2025, 10, 15, tzinfo=UTC))])
    labels = [label for _, label in _ticks_of(svg)]
    assert labels[0] == "2025-11" and "2026-01" in labels and labels[-1] == "2026-06"
    assert labels == sorted(set(labels))  # each month once, in order


def test_values_believed_over_the_same_interval_are_drawn_on_separate_lanes():
    """Spanish and Portuguese, both spoken all along: two rectangles, two readable labels."""
    spanish = _bar(row="speaks", label="Spanish")
    portuguese = _bar(row="speaks", label="Portuguese")
    svg = _svg([spanish, portuguese])
    (panel,) = svg.findall(f".//{SVG}g[@class='panel']")
    assert panel.get("data-lanes") == "2"
    labels = {t.text: t for v in _versions(svg) for t in v.iter(f"{SVG}text")}
    assert set(labels) == {"Spanish", "Portuguese"}
    gap = abs(float(labels["Spanish"].get("y")) - float(labels["Portuguese"].get("y")))
    assert gap >= 20  # more than a line of 11 px text apart
    rects = [v.find(f"{SVG}rect") for v in _versions(svg)]
    tops = sorted((float(r.get("y")), float(r.get("y")) + float(r.get("height"))) for r in rects)
    assert tops[0][1] <= tops[1][0]  # one lane's rectangle ends above the other's
    # A value believed only after Spanish stopped being believed shares its lane.
    closed = datetime(2026, 5, 2, tzinfo=UTC)
    stopped = _bar("knowledge_closed", row="speaks", label="Spanish", known_until=closed)
    irish = _bar(row="speaks", label="Irish", known_from=closed)
    panel = _svg([stopped, irish]).find(f".//{SVG}g[@class='panel']")
    assert panel.get("data-lanes") == "1"
