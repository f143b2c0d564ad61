"""Routes of the verification app."""

from django.urls import path

from attest.lazyviews import lazy_view

urlpatterns = [
    path(
        "v1/verify/quote", lazy_view("verification.api.views.VerifyQuoteView"), name="verify-quote"
    ),
    path(
        "v1/verify/quotes",
        lazy_view("verification.api.batch_views.VerifyQuotesView"),
        name="verify-quotes",
    ),
    path(
        "v1/verify/citations",
        lazy_view("verification.api.batch_views.VerifyCitationsView"),
        name="verify-citations",
    ),
    path("v1/fetch", lazy_view("verification.api.views.FetchView"), name="fetch"),
    path("v1/sample/page", lazy_view("verification.api.views.SamplePageView"), name="sample-page"),
    path(
        "v1/sample/missing",
        lazy_view("verification.api.views.SampleMissingPageView"),
        name="sample-missing",
    ),
    path(
        "v1/sample/quote", lazy_view("verification.api.views.SampleQuoteView"), name="sample-quote"
    ),
    path(
        "v1/sample/citations",
        lazy_view("verification.api.views.SampleCitationsView"),
        name="sample-citations",
    ),
]
