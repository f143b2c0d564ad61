"""The least a DRF view fetching a page does: parse the JSON body, GET the URL, answer JSON."""

from __future__ import annotations

import httpx
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

# One client per process, as a view would keep one; no kept-alive connections, so every
# request opens a new one to the page server, as Attest's fetch does (it pins the address).
_CLIENT = httpx.Client(
    trust_env=False, timeout=10.0, limits=httpx.Limits(max_keepalive_connections=0)
)


class MinimalQuoteView(APIView):
    class InputSerializer(serializers.Serializer):
        url = serializers.URLField()
        quote = serializers.CharField(max_length=4000)

    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        page = _CLIENT.get(data.validated_data["url"])
        return Response({"status": page.status_code, "bytes": len(page.content)})
