"""Routes of the verification app."""

from django.urls import path

from verification.api import batch_views, views

urlpatterns = [
    path("v1/verify/quote", views.VerifyQuoteView.as_view(), name="verify-quote"),
    path("v1/verify/quotes", batch_views.VerifyQuotesView.as_view(), name="verify-quotes"),
    path("v1/verify/citations", batch_views.VerifyCitationsView.as_view(), name="verify-citations"),
    path("v1/fetch", views.FetchView.as_view(), name="fetch"),
    path("v1/sample/page", views.SamplePageView.as_view(), name="sample-page"),
    path("v1/sample/missing", views.SampleMissingPageView.as_view(), name="sample-missing"),
    path("v1/sample/quote", views.SampleQuoteView.as_view(), name="sample-quote"),
    path("v1/sample/citations", views.SampleCitationsView.as_view(), name="sample-citations"),
]
