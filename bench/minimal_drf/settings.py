"""Settings for the minimal DRF view: no database, no sessions, no middleware but Django's core."""

from __future__ import annotations

SECRET_KEY = "bench-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "bench.minimal_drf.urls"
INSTALLED_APPS = ["rest_framework"]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
DATABASES: dict = {}
USE_TZ = True
REST_FRAMEWORK = {
    # No user model, no authentication, no throttling: only parsing, the view and rendering.
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
}
