"""Staff pages for the ledger: read-only except suspending projects and revoking credentials."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from attest.admin import ReadOnlyAdmin, ReadOnlyInline
from attest.errors import AttestError
from citations import models
from citations.services import credential_revoke, project_set_suspended
from citations.services.audit import audit_chain_first_break
from citations.services.corrections import retraction_record


def _staff(request) -> str:
    return f"staff:{request.user.get_username()}"


class CredentialInline(ReadOnlyInline):
    model = models.Credential
    fields = ["prefix", "label", "created_at", "revoked_at"]
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
        for project in queryset:
            project_set_suspended(project=project, suspended=True, actor=_staff(request))

    @admin.action(description="Reinstate the selected projects", permissions=["change"])
    def reinstate(self, request, queryset):
        for project in queryset:
            project_set_suspended(project=project, suspended=False, actor=_staff(request))

    def get_readonly_fields(self, request, obj=None):
        # Suspension goes through the audited actions, not the form.
        return ["created_at", "suspended_at", "audit_chain"]

    @admin.display(description="audit chain")
    def audit_chain(self, obj) -> str:
        """Recomputed on each view, like ``manage.py verify_audit_chain``."""
        if obj is None or obj.pk is None:
            return "-"
        first_break = audit_chain_first_break(project=obj)
        if first_break is None:
            return "intact"
        return f"BROKEN at event {first_break.seq}: {first_break.reason}"


@admin.register(models.Credential)
class CredentialAdmin(ReadOnlyAdmin):
    # Never the secret's hash: only what tells credentials apart.
    list_display = ["prefix", "project", "label", "created_at", "revoked_at"]
    fields = ["prefix", "project", "label", "created_at", "revoked_at"]
    readonly_fields = fields
    list_filter = ["revoked_at"]
    list_select_related = ["project"]
    search_fields = ["prefix", "label", "project__name"]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected credentials", permissions=["change"])
    def revoke(self, request, queryset):
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


class FactVersionInline(ReadOnlyInline):
    model = models.FactVersion
    fk_name = "fact"
    fields = [
        "seq",
        "status",
        "valid_from",
        "valid_until",
        "valid_precision",
        "known_from",
        "known_until",
        "superseded_by",
        "supersession_source_observation",
        "retraction",
        "reinterpreted_by",
    ]
    readonly_fields = fields


class EvidenceInline(ReadOnlyInline):
    model = models.Evidence
    fields = [
        "observation",
        "byte_start",
        "byte_end",
        "extractor_version",
        "authored_by",
        "created_at",
        "known_until",
    ]
    readonly_fields = fields


class RetractForm(forms.Form):
    reason = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 3}), help_text="Why, for the record."
    )


@admin.register(models.Fact)
class FactAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "subject", "predicate", "value", "created_at"]
    list_select_related = ["project", "subject"]
    list_filter = ["predicate"]
    search_fields = ["=id", "value", "statement"]
    raw_id_fields = ["project", "subject", "generation"]
    inlines = [FactVersionInline, EvidenceInline]
    actions = ["retract"]

    @admin.action(description="Retract the selected facts (asks why)", permissions=["change"])
    def retract(self, request, queryset):
        """The same service as POST /v1/facts/{id}/retract, audited with the staff name."""
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
        return [field.name for field in self.model._meta.fields]


@admin.register(models.Evidence)
class EvidenceAdmin(ReadOnlyAdmin):
    list_display = ["id", "fact", "observation", "byte_start", "byte_end", "extractor_version"]
    raw_id_fields = ["project", "fact", "observation"]


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
