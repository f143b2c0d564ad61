"""Routes of the fact ledger."""

from django.urls import path

from citations.api import lifecycle_views, views

urlpatterns = [
    path("v1/observations", views.ObservationsView.as_view(), name="observations"),
    path("v1/recall", views.RecallView.as_view(), name="recall"),
    path("v1/facts", views.FactsView.as_view(), name="facts"),
    path("v1/predicates", views.PredicatesView.as_view(), name="predicates"),
    path("v1/facts/<str:fact_id>/retract", views.FactRetractView.as_view(), name="fact-retract"),
    path("v1/citations/resolve", views.ResolveView.as_view(), name="citations-resolve"),
    path("v1/rebuilds", lifecycle_views.RebuildsView.as_view(), name="rebuilds"),
    path(
        "v1/subjects/<path:subject>/export",
        lifecycle_views.SubjectExportView.as_view(),
        name="subject-export",
    ),
    path("v1/erasures", lifecycle_views.ErasuresView.as_view(), name="erasures"),
    path("v1/rebuilds/<int:generation_id>", lifecycle_views.RebuildView.as_view(), name="rebuild"),
]
