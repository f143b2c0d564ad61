"""Routes of the fact ledger."""

from django.urls import path

from attest.lazyviews import lazy_view

urlpatterns = [
    path("v1/credits", lazy_view("citations.api.credit_views.CreditsView"), name="credits"),
    path("v1/observations", lazy_view("citations.api.views.ObservationsView"), name="observations"),
    path("v1/recall", lazy_view("citations.api.views.RecallView"), name="recall"),
    path("v1/facts", lazy_view("citations.api.views.FactsView"), name="facts"),
    path("v1/changes", lazy_view("citations.api.feed_views.ChangesView"), name="changes"),
    path("v1/subjects", lazy_view("citations.api.feed_views.SubjectsView"), name="subjects"),
    path("v1/predicates", lazy_view("citations.api.views.PredicatesView"), name="predicates"),
    path(
        "v1/facts/<str:fact_id>/retract",
        lazy_view("citations.api.views.FactRetractView"),
        name="fact-retract",
    ),
    path(
        "v1/citations/resolve",
        lazy_view("citations.api.views.ResolveView"),
        name="citations-resolve",
    ),
    path("v1/rebuilds", lazy_view("citations.api.lifecycle_views.RebuildsView"), name="rebuilds"),
    path(
        "v1/subjects/<path:subject>/export",
        lazy_view("citations.api.lifecycle_views.SubjectExportView"),
        name="subject-export",
    ),
    path("v1/erasures", lazy_view("citations.api.lifecycle_views.ErasuresView"), name="erasures"),
    path(
        "v1/rebuilds/<int:generation_id>",
        lazy_view("citations.api.lifecycle_views.RebuildView"),
        name="rebuild",
    ),
]
