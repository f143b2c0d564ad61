"""Views a URLconf names by their dotted path, imported when a request (or a schema) needs them.

Every management command that runs the system checks imports the root URLconf (Django's
URL checks walk every pattern), and a URLconf that imports its views imports everything
they need: the payment SDK, the page fetcher, the matcher, the PDF readers. ``lazy_view``
keeps that out of a command's start-up: the pattern holds a stand-in that imports the view
at its first call or its first attribute read (Django's resolver, the CSRF middleware and
the schema generator read ``view_class``, ``csrf_exempt``, ``cls``, ``initkwargs``), so it
answers as the view itself would. A serving process imports every view before its first
request (``load_views``, a serving hook), so no request waits for an import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.module_loading import import_string


class LazyView:
    """A class-based view (Django's View, DRF's APIView) named by its dotted path; its
    ``as_view(**initkwargs)`` is taken at import. Django reads a class-based view's
    ``view_class`` for its name and path, so the stand-in's own module never shows."""

    def __init__(self, dotted: str, **initkwargs: Any) -> None:
        self.dotted = dotted
        self.initkwargs = initkwargs
        self._view: Callable[..., Any] | None = None

    def load(self) -> Callable[..., Any]:
        if self._view is None:
            self._view = import_string(self.dotted).as_view(**self.initkwargs)
        return self._view

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only reached for what the stand-in itself lacks: the view's own attributes (not
        # the protocols copy and pickle probe for, nor this object's own before __init__).
        if name in ("dotted", "initkwargs", "_view") or (
            name.startswith("__") and name not in ("__name__", "__qualname__")
        ):
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"<LazyView {self.dotted}>"


def lazy_view(dotted: str, **initkwargs: Any) -> LazyView:
    return LazyView(dotted, **initkwargs)


def _callbacks(patterns: Iterable[URLPattern | URLResolver]) -> Iterable[Any]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _callbacks(pattern.url_patterns)
        else:
            yield pattern.callback


def load_views() -> None:
    """Import every lazily named view of the root URLconf (a serving hook)."""
    for callback in _callbacks(get_resolver().url_patterns):
        if isinstance(callback, LazyView):
            callback.load()
