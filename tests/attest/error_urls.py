"""A URLconf of views that raise each error class, for the envelope tests."""

from django.urls import include, path
from rest_framework import serializers
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from attest import errors


class Citation(serializers.Serializer):
    url = serializers.URLField()
    quote = serializers.CharField(max_length=10)


class Batch(serializers.Serializer):
    citations = Citation(many=True)


class ValidateView(APIView):
    def post(self, request):
        serializer = Batch(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response({"ok": True})


def raising(exc):
    class Raising(APIView):
        def get(self, request):
            raise exc

    return Raising.as_view()


class Boom(APIView):
    def get(self, request):
        raise RuntimeError("secret internals: password=hunter2")


urlpatterns = [
    path("validate", ValidateView.as_view()),
    path("401", raising(NotAuthenticated())),
    path("401-bad", raising(AuthenticationFailed())),
    path("403", raising(PermissionDenied())),
    path("404", raising(errors.NotFound())),
    path(
        "402",
        raising(
            errors.AttestError(
                "Pay first.",
                code="payment_required",
                status_code=402,
                details={"reason": "no_payment"},
            )
        ),
    ),
    path("422", raising(errors.Unprocessable("Too costly.", code="match_too_costly"))),
    path(
        "429", raising(errors.RateLimited(retry_after=10, details={"reason": "uncharged_failures"}))
    ),
    path(
        "503", raising(errors.OverCapacity(retry_after=3, details={"reason": "match_queue_full"}))
    ),
    path("501", raising(errors.NotOnEdge(details={"reason": "pdf"}))),
    path("500", Boom.as_view()),
    path("", include("wiring.urls")),
]

handler404 = "attest.views.not_found"
handler500 = "attest.views.server_error"
