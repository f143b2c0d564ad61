"""Django settings for Attest, read from the environment (django-environ).

Every value has a safe default for the embedded setup (SQLite, local-memory
cache, a development key under var/). A malformed value stops start-up with
ImproperlyConfigured instead of falling back silently.
"""

from __future__ import annotations

from pathlib import Path

import environ

from attest.config import (
    bounded_int,
    cache_config,
    database_config,
    host_port_list,
    ip_network_list,
    optional_base_url,
    optional_email,
    positive_number,
    public_base_url,
    replica_configs,
    request_rate,
    secret_key,
    strict_bool,
)

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A .env file fills in only what the caller's environment leaves unset.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.str("ATTEST_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = strict_bool(env, "DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "attest",
    "verification",
    "citations",
    "receipts",
    "billing",
    "django_tasks",
    "django_tasks_db",
]

# Background jobs (project rebuilds) go through the database queue; `manage.py db_worker`
# runs them, and `make run` starts one beside gunicorn.
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default"],
    }
}

MIDDLEWARE = [
    # Outermost: times and counts every answer, whichever layer gave it.
    "attest.middleware.RequestMetricsMiddleware",
    "attest.middleware.RequestIDMiddleware",
    # Before anything that can answer, so every API answer (errors included) carries CORS.
    "corsheaders.middleware.CorsMiddleware",
    # A query string that is not UTF-8 is refused before any route reads it.
    "attest.middleware.QueryTextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "wiring.urls"
# The routes the OpenAPI schema describes, which the 402 offer's bazaar extension reads
# its schemas from (billing.discovery); a test's own ROOT_URLCONF does not change it.
ATTEST_API_URLCONF = ROOT_URLCONF
WSGI_APPLICATION = "attest.wsgi.application"
ASGI_APPLICATION = "attest.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_config(env, default=f"sqlite:///{VAR_DIR / 'attest.sqlite3'}")}
DATABASES["default"].setdefault("OPTIONS", {})
# A connection is kept for the next request rather than opened for every one (a new
# SQLite connection with its pragmas costs about 1.5 ms of CPU, a verify call ~10 ms);
# health checks replace one the database dropped. ``?CONN_MAX_AGE=0`` in DATABASE_URL
# closes it after every request again.
DATABASES["default"].setdefault("CONN_MAX_AGE", 600)
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let several gunicorn workers share the file. secure_delete
    # zeroes what a DELETE or UPDATE frees, so an erasure leaves no old text in free pages
    # or free space inside a page (the erasure then checkpoints the WAL away).
    DATABASES["default"]["OPTIONS"].setdefault(
        "init_command",
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;",
    )
    DATABASES["default"]["OPTIONS"].setdefault("timeout", 20)
    DATABASES["default"]["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
DATABASES["default"].setdefault("TEST", {})
SECRET_KEY = secret_key(env, database_engine=DATABASES["default"]["ENGINE"], var_dir=VAR_DIR)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The largest request body accepted; a bigger one is 413 request_too_large.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(
    positive_number(env, "ATTEST_MAX_BODY_BYTES", default=8 * 1024 * 1024)
)

# The default cache is per process: nothing a limit depends on is kept in it then (the
# limiter, trial, capacity and Crossref pacing use the database unless CACHE_URL is Redis).
CACHES = {"default": cache_config(env, default="locmemcache://attest")}

# Read replicas (DATABASE_REPLICA_URLS): the ledger's reads and the log's proofs may be
# served from one (attest.replicas); everything else, and every write, uses the primary.
DATABASES.update(replica_configs(env, primary=DATABASES["default"], cache=CACHES["default"]))
DATABASE_ROUTERS = ["attest.replicas.ReplicaRouter"]
# A replica further behind the primary than this many seconds is skipped.
ATTEST_REPLICA_MAX_LAG = positive_number(env, "ATTEST_REPLICA_MAX_LAG", default=5.0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
# Times to the second and with the zone ("2026-12-01 20:17:30 UTC") wherever a template or
# the admin writes one: attest/formats/en/formats.py.
FORMAT_MODULE_PATH = ["attest.formats"]

STATIC_URL = "static/"
# Only needed for collectstatic; whitenoise serves from the app folders otherwise.
STATIC_ROOT = env.str("ATTEST_STATIC_ROOT", default="") or None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve app static files straight from their packages: no collectstatic step on a fresh machine.
WHITENOISE_USE_FINDERS = True

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
USE_X_FORWARDED_HOST = False

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["attest.parsers.JSONBodyParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "attest.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Attest API",
    "DESCRIPTION": (
        "Verify that cited quotes are on the pages they are attributed to, with signed "
        "receipts, and keep a bitemporal fact ledger whose facts point at the exact bytes "
        "they came from."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "billing.openapi.document_unpaid_limit",
        "attest.schema.document_contract",
        # /mcp is a JSON-RPC view, not a DRF route: added here with its own answers.
        "wiring.openapi.document_mcp",
        "attest.schema.name_operations",
    ],
    # Two choice sets share the field name "match": the mode asked for and the verdict given.
    "ENUM_NAME_OVERRIDES": {
        "MatchModeEnum": "verification.pipeline.steps.MODES",
        "MatchVerdictEnum": "verification.pipeline.steps.VERDICTS",
        "RebuildKindEnum": "citations.services.rebuilds.REBUILD_KINDS",
        "FactStatusEnum": "citations.extract.intervals.STATUSES",
    },
}

# --- CORS (django-cors-headers) -------------------------------------------
# Any web page may call the API, never with cookies: payment travels in headers, so a
# browser client can pay, and no ambient credential of a visitor can be used.
CORS_URLS_REGEX = r"^/(v1/|\.well-known/|healthz$)"
CORS_ALLOW_ALL_ORIGINS = True
CORS_ALLOW_CREDENTIALS = False
CORS_ALLOW_HEADERS = (
    "accept",
    "authorization",
    "content-type",
    "payment-signature",
    "x-payment",
    "x-request-id",
)
CORS_EXPOSE_HEADERS = (
    "PAYMENT-REQUIRED",
    "PAYMENT-RESPONSE",
    "X-PAYMENT-RESPONSE",
    "Retry-After",
    "X-Request-ID",
    "RateLimit",
    "RateLimit-Policy",
)

# --- Attest ---------------------------------------------------------------

# Where the Ed25519 receipt keys live: a PEM file, a directory of PEM files, or inline PEM.
ATTEST_SIGNING_KEYS = env.str("ATTEST_SIGNING_KEYS", default=str(VAR_DIR / "signing_keys"))
# Crossref's REST API for the DOIs of cited pages; empty turns DOI lookups off.
ATTEST_CROSSREF_URL = optional_base_url(
    env, "ATTEST_CROSSREF_URL", default="https://api.crossref.org"
)
# Sent in the User-Agent (mailto:) so Crossref serves us from its polite pool.
ATTEST_CROSSREF_MAILTO = optional_email(env, "ATTEST_CROSSREF_MAILTO")
# Seconds one Crossref request may take before the lookup is skipped (reason timeout).
ATTEST_CROSSREF_TIMEOUT = positive_number(env, "ATTEST_CROSSREF_TIMEOUT", default=5.0)
# host:port pairs that may be fetched although their address is private. Tests and demos only.
ATTEST_FETCH_ALLOW = host_port_list(env, "ATTEST_FETCH_ALLOW")
ATTEST_EDGE = strict_bool(env, "ATTEST_EDGE", default=False)
# The whole of one page fetch (every redirect hop and body read), in seconds.
ATTEST_FETCH_DEADLINE = positive_number(env, "ATTEST_FETCH_DEADLINE", default=20.0)
# Decoded bytes read from one page; a compressed body stops at this many.
ATTEST_FETCH_MAX_BYTES = int(
    positive_number(env, "ATTEST_FETCH_MAX_BYTES", default=15 * 1024 * 1024)
)
# The one base URL the service calls itself by: receipts' iss, offers' resource URLs and
# the samples' page URLs. Unset, it is the address `make run` serves on (ATTEST_SERVE_URL,
# which the Makefile sets from HOST and PORT).
ATTEST_PUBLIC_URL = public_base_url(
    env,
    "ATTEST_PUBLIC_URL",
    fallback=env.str("ATTEST_SERVE_URL", default="") or "http://127.0.0.1:8000",
)

# Capacity shared by every server process (Redis when CACHE_URL is Redis, else the database):
# batches matched at once and batches that may wait behind them; PDFs read at once and
# PDFs that may wait. Size them for the whole deployment, not one host.
ATTEST_MATCH_SLOTS = bounded_int(env, "ATTEST_MATCH_SLOTS", 2, minimum=1, maximum=1000)
ATTEST_MATCH_QUEUE = bounded_int(env, "ATTEST_MATCH_QUEUE", 6, minimum=0, maximum=10_000)
ATTEST_PDF_READERS = bounded_int(env, "ATTEST_PDF_READERS", 2, minimum=1, maximum=1000)
ATTEST_PDF_QUEUE = bounded_int(env, "ATTEST_PDF_QUEUE", 6, minimum=0, maximum=10_000)

# Requests per credential on the fact-ledger routes (a rate such as 1200/m).
ATTEST_LEDGER_RATE = request_rate(env, "ATTEST_LEDGER_RATE", default="1200/m")

X402_PAY_TO = env.str("X402_PAY_TO", default="0x000000000000000000000000000000000000dEaD")
X402_NETWORK = env.str("X402_NETWORK", default="eip155:84532")
X402_FACILITATOR_URL = env.str("X402_FACILITATOR_URL", default="")
# Seconds to wait for one facilitator call; a settle that outlives it is treated as pending.
X402_FACILITATOR_TIMEOUT = bounded_int(env, "X402_FACILITATOR_TIMEOUT", 20, minimum=1, maximum=300)
# Free calls per caller IP per UTC day for a request without a payment header (0: no trial).
ATTEST_TRIAL_CALLS_PER_DAY = bounded_int(
    env, "ATTEST_TRIAL_CALLS_PER_DAY", 5, minimum=0, maximum=1_000_000
)
# Unpaid requests per caller IP (checks before an offer, samples, receipt checks); paid ones
# never count. A rate such as 300/m; every process shares the count (in Redis with
# CACHE_URL=redis://, else in the database: see attest.ratelimit).
ATTEST_UNPAID_RATE = request_rate(env, "ATTEST_UNPAID_RATE", default="300/m")
# Fetches per cited origin (scheme, host, port) across every process; its robots.txt
# Crawl-delay for AttestBot tightens it (capped at 10 s). See verification.network.politeness.
ATTEST_HOST_RATE = request_rate(env, "ATTEST_HOST_RATE", default="120/m")
# Unpaid requests of one caller IP whose checks before an offer (a host resolved, robots.txt
# read) may run at once across every process; one more is 429 unpaid_in_flight.
ATTEST_UNPAID_IN_FLIGHT = bounded_int(env, "ATTEST_UNPAID_IN_FLIGHT", 2, minimum=1, maximum=1000)
# Seconds between two transparency-log entries of one project's audit chain head, per
# process (0: after every event). Each entry costs a log append (a few ms); the events since
# the last one are reported by verify_audit_chain as not yet logged (--log-heads logs them).
ATTEST_AUDIT_HEAD_INTERVAL = bounded_int(
    env, "ATTEST_AUDIT_HEAD_INTERVAL", 10, minimum=0, maximum=86_400
)
# A scraper elsewhere than this host reads /metrics with `Authorization: Bearer <token>`;
# empty: only loopback may (attest.views.metrics).
ATTEST_METRICS_TOKEN = env.str("ATTEST_METRICS_TOKEN", default="")
# Proxies (addresses or CIDR blocks) whose X-Forwarded-For is believed; empty: the socket address.
ATTEST_TRUSTED_PROXIES = ip_network_list(env, "ATTEST_TRUSTED_PROXIES")

# --- Logging --------------------------------------------------------------

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
if LOG_FORMAT not in {"json", "text"}:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("LOG_FORMAT must be json or text.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "attest.logs.RequestIDFilter"}},
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s "
            "%(client_request_id)s %(trace_id)s %(span_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "text": {
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s %(client_request_id)s] "
            "%(message)s"
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Django logs every unhandled exception here with its traceback (the request ID
        # comes from the filter); the API's handler logs the database outages it answers.
        "django.request": {"level": "ERROR", "propagate": True},
    },
}
