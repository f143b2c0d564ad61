"""Routes of the verification app."""

from django.urls import path

from verification import views

urlpatterns = [
    path("v1/verify/quote", views.VerifyQuoteView.as_view(), name="verify-quote"),
    path("v1/sample/page", views.SamplePageView.as_view(), name="sample-page"),
    path("v1/sample/missing", views.SampleMissingPageView.as_view(), name="sample-missing"),
    path("v1/sample/quote", views.SampleQuoteView.as_view(), name="sample-quote"),
]
