"""Read-only admin pages: the receipt keys (never private material) and the transparency log."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path

from attest.admin import ReadOnlyAdmin
from receipts import selectors
from receipts.keyring import KeyConfigError
from receipts.models import LogLeaf, SigningKey


@admin.register(SigningKey)
class SigningKeyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_urls(self):
        # Only the list: there is no row to open, edit or delete.
        name = f"{self.opts.app_label}_{self.opts.model_name}_changelist"
        return [path("", self.admin_site.admin_view(self.changelist_view), name=name)]

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        ring, problem = None, None
        try:
            ring = selectors.signing_keyring()
        except (KeyConfigError, OSError) as exc:
            problem = str(exc)
        keys = [
            {
                "kid": entry.kid,
                "state": entry.state,
                "can_sign": entry.can_sign,
                "created": entry.created,
                "origin": entry.origin,
                "x": entry.public_jwk()["x"],
            }
            for entry in (ring.entries if ring else ())
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Signing keys",
            "opts": self.opts,
            "ring": ring,
            "keys": keys,
            "problem": problem,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/receipts/signing_keys.html", context)


@admin.register(LogLeaf)
class LogLeafAdmin(ReadOnlyAdmin):
    """The log's leaves, newest first; nothing can be added, changed or deleted here."""

    list_display = ["index", "kind", "audit_project", "created_at"]
    list_filter = ["kind"]
    search_fields = ["=index", "=audit_project"]
    ordering = ["-index"]
