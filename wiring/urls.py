"""Root URL configuration: one include per app, plus service-wide routes."""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from attest import views
from wiring import dashboard, docs, llms, readiness


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """POST /mcp (wiring.mcp.views), imported by its first call: the MCP SDK's types take a
    third of a second to import, which no manage.py command needs."""
    from wiring.mcp.views import mcp_endpoint as endpoint

    return endpoint(request)


urlpatterns = [
    path("", views.landing, name="landing"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", readiness.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    path("llms.txt", llms.llms_txt, name="llms-txt"),
    path("mcp", mcp_endpoint, name="mcp"),
    path("v1/openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs/api", SpectacularSwaggerView.as_view(url_name="openapi"), name="api-docs"),
    path("", include(docs.urlpatterns)),
    path("admin/dashboard/", admin.site.admin_view(dashboard.dashboard), name="admin-dashboard"),
    path("admin/", admin.site.urls),
    path("", include("receipts.urls")),
    path("", include("verification.urls")),
    path("", include("citations.urls")),
]

handler400 = "attest.views.bad_request"
handler403 = "attest.views.permission_denied"
handler404 = "attest.views.not_found"
handler500 = "attest.views.server_error"
