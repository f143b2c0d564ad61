"""Routes of the fact ledger."""

from django.urls import path

from citations import views

urlpatterns = [
    path("v1/observations", views.ObservationsView.as_view(), name="observations"),
    path("v1/recall", views.RecallView.as_view(), name="recall"),
    path("v1/facts", views.FactsView.as_view(), name="facts"),
    path("v1/facts/<str:fact_id>/retract", views.FactRetractView.as_view(), name="fact-retract"),
    path("v1/citations/resolve", views.ResolveView.as_view(), name="citations-resolve"),
]
