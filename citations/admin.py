"""Staff pages for the ledger: read-only except suspending projects and revoking credentials."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import TruncDate
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from attest.admin import InputFilter, ReadOnlyAdmin, ReadOnlyInline
from attest.errors import AttestError
from attest.registry import register_daily
from citations import models
from citations.extract.intervals import STATUSES
from citations.extract.timeline import Bar, timeline_svg
from citations.selectors import EvidenceMismatch, iso_utc, verified_evidence

# The ledger's services (the extractor's pattern tables among them) are imported by the
# admin action or page that uses them, not when the admin loads: every manage.py command
# loads the admin modules.

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


def _staff(request) -> str:
    return f"staff:{request.user.get_username()}"


class CredentialInline(ReadOnlyInline):
    model = models.Credential
    # Tuples where fields and readonly_fields share one value: the stubs type the two as
    # different lists, and only the immutable tuple satisfies both.
    fields = ("prefix", "label", "created_at", "revoked_at")
    readonly_fields = fields


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at", "suspended_at", "audit_chain"]
    search_fields = ["name"]
    fields = ["name", "created_at", "suspended_at", "audit_chain"]
    inlines = [CredentialInline]
    actions = ["suspend", "reinstate"]

    @admin.action(
        description="Suspend the selected projects (their credentials answer 403)",
        permissions=["change"],
    )
    def suspend(self, request, queryset):
        from citations.services import project_set_suspended

        for project in queryset:
            project_set_suspended(project=project, suspended=True, actor=_staff(request))

    @admin.action(description="Reinstate the selected projects", permissions=["change"])
    def reinstate(self, request, queryset):
        from citations.services import project_set_suspended

        for project in queryset:
            project_set_suspended(project=project, suspended=False, actor=_staff(request))

    def get_readonly_fields(self, request, obj=None):
        # Suspension goes through the audited actions, not the form.
        return ["created_at", "suspended_at", "audit_chain"]

    @admin.display(description="audit chain")
    def audit_chain(self, obj: models.Project) -> str:
        """Recomputed on every view, like ``manage.py verify_audit_chain``."""
        from citations.services.audit import audit_chain_first_break

        if obj is None or obj.pk is None:
            return "—"
        first_break = audit_chain_first_break(project=obj)
        if first_break is None:
            return format_html('<span class="chain-intact">{}</span>', "intact")
        return format_html(
            '<strong class="chain-broken" style="color:#b00">BROKEN at event {}: {}</strong>',
            first_break.seq,
            first_break.reason,
        )


@admin.register(models.Credential)
class CredentialAdmin(ReadOnlyAdmin):
    # Never the secret's hash: only what tells credentials apart.
    list_display = ["prefix", "project", "label", "created_at", "revoked_at"]
    fields = ("prefix", "project", "label", "created_at", "revoked_at")
    readonly_fields = fields
    list_filter = ["revoked_at"]
    list_select_related = ["project"]
    search_fields = ["prefix", "label", "project__name"]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected credentials", permissions=["change"])
    def revoke(self, request, queryset):
        from citations.services import credential_revoke

        for credential in queryset.select_related("project"):
            credential_revoke(credential=credential, actor=_staff(request))

    def has_change_permission(self, request, obj=None) -> bool:
        # Needed for the revoke action; every field stays read-only.
        return request.user.is_superuser


@admin.register(models.Subject)
class SubjectAdmin(ReadOnlyAdmin):
    list_display = ["external_id", "project", "created_at", "erased_at"]
    list_select_related = ["project"]
    search_fields = ["external_id"]
    readonly_fields = ["timeline"]

    @admin.display(description="timeline: valid time across, known time up, one row a predicate")
    def timeline(self, obj: models.Subject) -> str:
        versions = (
            models.FactVersion.objects.filter(subject=obj)
            .select_related("fact")
            .order_by("predicate", "valid_from", "seq")
        )
        return versions_svg(versions, f"Timeline of subject {obj.external_id}")


@admin.register(models.Observation)
class ObservationAdmin(ReadOnlyAdmin):
    list_display = ["message_id", "project", "subject", "role", "occurred_at", "received_at"]
    list_select_related = ["project", "subject"]
    list_filter = ["role"]
    search_fields = ["message_id", "session"]
    raw_id_fields = ["project", "subject"]
    exclude = ["content"]
    readonly_fields = ["text"]

    @admin.display(description="text")
    def text(self, obj) -> str:
        return bytes(obj.content).decode("utf-8", "replace")


def _interval(start, end, precision: str = "") -> str:
    until = iso_utc(end) if end else "open"
    shown = f"{iso_utc(start)} → {until}"
    return f"{shown} ({precision})" if precision and precision != "instant" else shown


def _admin_link(obj, label: str) -> str:
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label)


class FactVersionInline(ReadOnlyInline):
    """Each version on one line: the two intervals and the links that closed them."""

    model = models.FactVersion
    fk_name = "fact"
    fields = ("seq", "status", "valid", "known", "links")
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related(
                "superseded_by",
                "supersession_source_observation",
                "retraction",
                "reinterpreted_by",
            )
        )

    @admin.display(description="valid (UTC)")
    def valid(self, obj: models.FactVersion) -> str:
        return _interval(obj.valid_from, obj.valid_until, obj.valid_precision)

    @admin.display(description="known (UTC)")
    def known(self, obj: models.FactVersion) -> str:
        return _interval(obj.known_from, obj.known_until)

    @admin.display(description="closed by")
    def links(self, obj: models.FactVersion) -> str:
        parts = []
        if obj.superseded_by_id:
            superseded_by, source = obj.superseded_by, obj.supersession_source_observation
            # A check constraint sets the two together.
            assert superseded_by is not None and source is not None
            parts.append(
                format_html(
                    "superseded by {} (message {})",
                    _admin_link(superseded_by, superseded_by.value),
                    _admin_link(source, source.message_id),
                )
            )
        if obj.retraction_id:
            parts.append(format_html("retracted: {}", _admin_link(obj.retraction, "retraction")))
        if obj.reinterpreted_by_id:
            parts.append(
                format_html(
                    "reinterpreted by {}",
                    _admin_link(obj.reinterpreted_by, f"generation {obj.reinterpreted_by_id}"),
                )
            )
        return format_html_join("; ", "{}", ((part,) for part in parts)) if parts else "—"


def quoted_words(evidence: models.Evidence) -> str:
    """The words at the evidence's offsets, re-read from the message bytes as resolve does."""
    if evidence.observation.erased_at or evidence.fact.erased_at:
        return "— (erased)"
    try:
        row = verified_evidence(evidence)
    except EvidenceMismatch:
        return format_html(
            '<strong style="color:#b00">{}</strong>',
            "the stored bytes do not match this evidence (resolve answers 500 evidence_mismatch)",
        )
    return format_html("<q>{}</q>", row.quote)


class EvidenceInline(ReadOnlyInline):
    model = models.Evidence
    fields = (
        "kind",
        "observation",
        "words",
        "byte_start",
        "byte_end",
        "extractor_version",
        "authored_by",
        "created_at",
        "known_until",
    )
    readonly_fields = fields

    @admin.display(description="quoted words")
    def words(self, obj: models.Evidence) -> str:
        return quoted_words(obj)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("observation", "fact")


def _latest_status() -> Subquery:
    """The status of the fact's latest version: what the ledger believes of it now."""
    latest = models.FactVersion.objects.filter(fact=OuterRef("pk")).order_by("-seq")
    return Subquery(latest.values("status")[:1])


class _LatestStatus(TypedDict):
    latest_status: str | None


class StatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [(status, status) for status in STATUSES]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(latest_status=self.value())
        return queryset


class SubjectFilter(InputFilter):
    title = "subject (exact ID)"
    parameter_name = "subject"

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(subject__external_id=self.value())
        return queryset


def _bar(version: models.FactVersion) -> Bar:
    fact = version.fact
    links = tuple(
        key
        for key, present in (
            ("superseded", version.superseded_by_id),
            ("retracted", version.retraction_id),
            ("reinterpreted", version.reinterpreted_by_id),
        )
        if present
    )
    label = "(erased)" if fact.erased_at else fact.value
    statement = "(erased)" if fact.erased_at else fact.statement
    return Bar(
        row=fact.predicate,
        label=label,
        status=version.status,
        valid_from=version.valid_from,
        valid_until=version.valid_until,
        known_from=version.known_from,
        known_until=version.known_until,
        links=links,
        title=(
            f"{statement} (version {version.seq}, {version.status})\n"
            f"valid {iso_utc(version.valid_from)} to {iso_utc(version.valid_until) or 'now'}\n"
            f"known {iso_utc(version.known_from)} to {iso_utc(version.known_until) or 'now'}"
        ),
    )


def versions_svg(versions, title: str) -> str:
    svg = timeline_svg([_bar(v) for v in versions], now=timezone.now(), title=title)
    return mark_safe(svg)


class RetractForm(forms.Form):
    reason = forms.CharField(
        max_length=models.RETRACTION_REASON_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Why, for the record.",
    )


@admin.register(models.Fact)
class FactAdmin(ReadOnlyAdmin):
    list_display = ["short_id", "project", "subject", "predicate", "value", "status", "created_at"]
    list_select_related = ["project", "subject"]
    list_filter = [StatusFilter, "predicate", SubjectFilter]
    search_fields = ["=id", "value", "statement", "subject__external_id"]
    raw_id_fields = ["project", "subject", "generation"]
    # The model's fields, with ``functional`` shown as what it means (it read "Functional ✓").
    fields = [
        "id",
        "project",
        "subject",
        "predicate",
        "cardinality",
        "value",
        "value_key",
        "statement",
        "source_role",
        "generation",
        "created_at",
        "erased_at",
        "timeline",
    ]
    readonly_fields = ["cardinality", "timeline"]
    inlines = [FactVersionInline, EvidenceInline]
    actions = ["retract"]
    # Newest first (index fact_newest_first): a UUID's order says nothing of time.
    ordering = ["-created_at", "-id"]

    @admin.action(description="Retract the selected facts (asks why)", permissions=["change"])
    def retract(self, request, queryset):
        """The same service as POST /v1/facts/{id}/retract, audited with the staff name."""
        from citations.services.corrections import retraction_record

        form = RetractForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return TemplateResponse(
                request,
                "admin/citations/fact/retract.html",
                {
                    **self.admin_site.each_context(request),
                    "title": "Retract facts",
                    "form": form,
                    "facts": queryset,
                    "opts": self.model._meta,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                },
            )
        for fact in queryset.select_related("project"):
            try:
                retraction_record(
                    project=fact.project,
                    fact_id=str(fact.pk),
                    reason=form.cleaned_data["reason"],
                    actor=_staff(request),
                )
            except AttestError as exc:
                self.message_user(request, f"{fact.pk}: {exc.message}", messages.WARNING)
            else:
                self.message_user(request, f"{fact.pk}: retracted.", messages.SUCCESS)
        return None

    def has_change_permission(self, request, obj=None) -> bool:
        # Needed for the retract action; every field stays read-only.
        return request.user.is_superuser

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields] + self.readonly_fields

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(latest_status=_latest_status())

    @admin.display(description="ID", ordering="id")
    def short_id(self, obj: models.Fact) -> str:
        return str(obj.pk)[:8]

    @admin.display(description="status", ordering="latest_status")
    def status(self, obj: WithAnnotations[models.Fact, _LatestStatus]) -> str:
        return obj.latest_status or "—"

    @admin.display(description="values at a time")
    def cardinality(self, obj: models.Fact) -> str:
        if obj.functional:
            return "one (cardinality one: a new value supersedes the believed one)"
        return "many (cardinality many: values accumulate)"

    @admin.display(description="timeline: valid time across, known time up")
    def timeline(self, obj: models.Fact) -> str:
        versions = obj.versions.select_related("fact").order_by("seq")
        return versions_svg(versions, f"Timeline of fact {obj.pk}")


class WebSourceInline(ReadOnlyInline):
    """A web row's page and receipt (the quote shows as the row's quoted words)."""

    model = models.WebSource
    fields = (
        "url",
        "final_url",
        "route",
        "match",
        "start",
        "end",
        "pdf_page",
        "retrieved_at",
        "doi",
        "doi_status",
        "receipt_index",
        "receipt_log_index",
    )
    readonly_fields = fields


@admin.register(models.Evidence)
class EvidenceAdmin(ReadOnlyAdmin):
    list_display = ["id", "fact", "kind", "words", "byte_start", "byte_end", "extractor_version"]
    list_filter = ["kind"]
    list_select_related = ["fact", "observation"]
    raw_id_fields = ["project", "fact", "observation"]
    readonly_fields = ["words"]
    inlines = [WebSourceInline]

    @admin.display(description="quoted words")
    def words(self, obj: models.Evidence) -> str:
        return quoted_words(obj)


@admin.register(models.Generation)
class GenerationAdmin(ReadOnlyAdmin):
    """Rebuilds and their progress: a project rebuild counts subjects as the worker goes."""

    list_display = [
        "id",
        "project",
        "kind",
        "state",
        "progress",
        "retired",
        "admitted",
        "created_at",
        "finished_at",
    ]
    list_filter = ["kind", "state"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "source_observation"]
    readonly_fields = ["progress"]

    @admin.display(description="progress")
    def progress(self, obj) -> str:
        return f"{obj.subjects_done} of {obj.subjects_total} subjects"


@admin.register(models.Retraction)
class RetractionAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "fact", "retracted_by", "retracted_at"]
    raw_id_fields = ["project", "fact", "replacement"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = [
        "seq",
        "project",
        "operation",
        "outcome",
        "actor",
        "source_count",
        "created_at",
    ]
    list_select_related = ["project"]
    list_filter = ["operation", "outcome"]
    search_fields = ["request_id", "actor"]


def daily_counts(start):
    """The dashboard's ledger operations (audit events) per UTC day since start."""
    events = (
        models.AuditEvent.objects.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(total=Count("id"))
    )
    for row in events:
        yield row["day"], "ledger", row["total"]


register_daily(daily_counts)


class DeclarePredicateForm(forms.ModelForm):
    class Meta:
        model = models.DeclaredPredicate
        fields = ["project", "name", "cardinality", "description"]

    def clean(self):
        from citations.services.predicates import predicate_check

        data = super().clean()
        try:
            predicate_check(
                name=data.get("name", ""),
                cardinality=data.get("cardinality", ""),
                description=data.get("description", ""),
            )
            project, name = data.get("project"), data.get("name")
            known = models.DeclaredPredicate.objects.filter(project=project, name=name).first()
            if known is not None and known.cardinality != data.get("cardinality"):
                raise forms.ValidationError(
                    f"{name!r} is already declared with cardinality {known.cardinality!r}."
                )
        except AttestError as exc:
            raise forms.ValidationError(exc.message) from None
        return data


@admin.register(models.DeclaredPredicate)
class DeclaredPredicateAdmin(admin.ModelAdmin):
    """A project's own predicates: listed read-only; staff declare one through the same
    service as POST /v1/predicates, audited with the staff name."""

    form = DeclarePredicateForm
    list_display = ["name", "cardinality", "project", "declared_by", "created_at"]
    list_filter = ["cardinality"]
    list_select_related = ["project"]
    search_fields = ["name"]
    raw_id_fields = ["project"]

    def has_change_permission(self, request, obj=None):
        return False  # a declaration is never edited: declare another name instead

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        from citations.services.predicates import predicate_declare

        data = form.cleaned_data
        predicate_declare(
            project=data["project"],
            name=data["name"],
            cardinality=data["cardinality"],
            description=data.get("description", ""),
            actor=_staff(request),
        )
        obj.pk = models.DeclaredPredicate.objects.get(project=data["project"], name=data["name"]).pk
