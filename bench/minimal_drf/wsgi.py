"""gunicorn bench.minimal_drf.wsgi: the minimal DRF view, served as Attest is."""

import os

from django.core.wsgi import get_wsgi_application

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.minimal_drf.settings"
application = get_wsgi_application()
