"""WSGI entry point (gunicorn attest.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from attest.tracing import configure_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
# Before the application loads its middleware: the Django instrumentation adds its own.
configure_tracing()
application = get_wsgi_application()

# Served processes do what the apps registered for serving before the first request (billing
# loads the payment stack, with its side effect undone); management commands skip it.
from attest.registry import prepare_to_serve  # noqa: E402  (needs the apps loaded above)

prepare_to_serve()
