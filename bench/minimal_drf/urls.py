"""One route, POST /v1/verify/quote, so the bench sends both servers the same request."""

from __future__ import annotations

from django.urls import path

from bench.minimal_drf.views import MinimalQuoteView

urlpatterns = [path("v1/verify/quote", MinimalQuoteView.as_view())]
