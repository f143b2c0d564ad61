"""WSGI entry point (gunicorn attest.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
application = get_wsgi_application()

# Served processes load the payment stack before the first request, with its side effect
# undone; management commands skip it (billing.apps.load_payment_stack).
from billing.apps import load_payment_stack  # noqa: E402  (needs the apps loaded above)

load_payment_stack()
