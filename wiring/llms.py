"""GET /llms.txt: the docs for language models, after the llms.txt convention (a Markdown
title, a one-line summary, then sections of links with a line each).

Built from what the service has: every page of the docs registry, the OpenAPI schema and
the free samples' routes, each as a full URL on the host that asked.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, reverse
from django.views.decorators.http import require_safe

from verification import urls as verification_urls
from wiring import docs

SUMMARY = (
    "Attest checks whether a quote is on the web page or PDF it is attributed to, says what "
    "kind of page it found, signs a receipt anyone can check offline, and keeps a fact ledger "
    "whose facts point at the exact bytes they came from."
)


def _samples() -> list[URLPattern]:
    """The free samples' routes (the demo 404 page, which answers 404 on purpose, left out)."""
    return [
        pattern
        for pattern in verification_urls.urlpatterns
        if isinstance(pattern, URLPattern)
        and (pattern.name or "").startswith("sample-")
        and pattern.name != "sample-missing"
    ]


def _described(pattern: URLPattern) -> str:
    """The view's docstring, first line, after its "GET /path:" label."""
    view = getattr(pattern.callback, "view_class", pattern.callback)
    first = (view.__doc__ or "").strip().splitlines()[0]
    return first.partition(": ")[2] or first


def index_text(base: str) -> str:
    lines = ["# Attest", "", f"> {SUMMARY}", ""]
    lines += ["## Docs", "", f"- [Documentation]({base}{reverse('docs')}): every page below"]
    for name, group in docs.groups():
        lines += ["", f"## {name}", ""]
        lines += [f"- [{d.title}]({base}{reverse(d.url_name)}): {d.summary}" for d in group]
    lines += [
        "",
        "## API",
        "",
        f"- [OpenAPI schema]({base}{reverse('openapi')}): every route, field and error, as JSON",
        f"- [API reference]({base}{reverse('api-docs')}): the schema, browsable",
        "",
        "## Samples",
        "",
    ]
    for pattern in _samples():
        path = reverse(pattern.name)
        lines.append(f"- [GET {path}]({base}{path}): {_described(pattern)}")
    return "\n".join(lines) + "\n"


@require_safe
def llms_txt(request: HttpRequest) -> HttpResponse:
    base = f"{request.scheme}://{request.get_host()}"
    return HttpResponse(index_text(base), content_type="text/markdown; charset=utf-8")
