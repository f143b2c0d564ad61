"""Environment readers that fail loudly, kept apart so tests can call them directly."""

from __future__ import annotations

import ipaddress
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

DATABASE_SCHEMES = {"sqlite", "postgres", "postgresql", "pgsql", "psql"}
CACHE_SCHEMES = {"locmemcache", "redis", "rediss", "dummycache"}


def database_config(env: environ.Env, default: str) -> dict:
    """Parse DATABASE_URL, refusing anything that is not SQLite or PostgreSQL."""
    value = env.str("DATABASE_URL", default=default)
    scheme = urlsplit(value).scheme
    if scheme not in DATABASE_SCHEMES:
        raise ImproperlyConfigured(
            f"DATABASE_URL must start with sqlite:// or postgres://, got {scheme or 'no'} scheme."
        )
    config = env.db_url_config(value)
    if scheme != "sqlite" and not config.get("NAME"):
        raise ImproperlyConfigured("DATABASE_URL names no database (postgres://user@host/NAME).")
    if scheme == "sqlite" and not config.get("NAME"):
        raise ImproperlyConfigured("DATABASE_URL names no SQLite file (sqlite:////path/to.db).")
    return config


def replica_configs(env: environ.Env, *, primary: dict, cache: dict) -> dict[str, dict]:
    """DATABASE_REPLICA_URLS (comma-separated PostgreSQL URLs) as Django database aliases
    ``replica_1``, ``replica_2``, ...: each read-only, one-second connect timeout, mirrored to
    the primary in tests. Replicas need PostgreSQL and a shared cache: a project's last write
    position is kept there, and a cache per process would let another instance read a
    replica that has not replayed that write."""
    urls = [url.strip() for url in env.str("DATABASE_REPLICA_URLS", default="").split(",")]
    urls = [url for url in urls if url]
    if not urls:
        return {}
    if primary["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL.")
    if not cache["BACKEND"].startswith("django_redis"):
        raise ImproperlyConfigured(
            "DATABASE_REPLICA_URLS needs CACHE_URL=redis://, which every instance shares."
        )
    replicas = {}
    for number, url in enumerate(urls, start=1):
        if urlsplit(url).scheme not in DATABASE_SCHEMES - {"sqlite"}:
            raise ImproperlyConfigured(f"DATABASE_REPLICA_URLS: {url!r} is not postgres://.")
        config = env.db_url_config(url)
        config.setdefault("OPTIONS", {}).setdefault("connect_timeout", 1)
        config["OPTIONS"].setdefault("options", "-c default_transaction_read_only=on")
        config.setdefault("CONN_MAX_AGE", primary.get("CONN_MAX_AGE", 0))
        config.setdefault("CONN_HEALTH_CHECKS", True)
        config["TEST"] = {"MIRROR": "default"}
        replicas[f"replica_{number}"] = config
    return replicas


def cache_config(env: environ.Env, default: str) -> dict:
    """Parse CACHE_URL; only local memory and Redis are supported."""
    value = env.str("CACHE_URL", default=default)
    scheme = urlsplit(value).scheme
    if scheme not in CACHE_SCHEMES:
        raise ImproperlyConfigured(
            f"CACHE_URL must start with locmemcache:// or redis://, got {scheme or 'no'} scheme."
        )
    config = env.cache_url_config(value)
    if scheme.startswith("redis"):
        # django-redis: a cache outage must surface as an error, not a silent miss,
        # because rate-limit buckets and capacity slots live here.
        config["BACKEND"] = "django_redis.cache.RedisCache"
        # An unreachable Redis must fail in a second, not hang a worker for the kernel's
        # TCP timeout: every use then answers as docs/operations.md says.
        options = config.setdefault("OPTIONS", {})
        options.setdefault("SOCKET_CONNECT_TIMEOUT", 1.0)
        options.setdefault("SOCKET_TIMEOUT", 1.0)
    return config


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def strict_bool(env: environ.Env, name: str, default: bool) -> bool:
    """Read a boolean, refusing values such as "perhaps" that django-environ reads as False."""
    raw = env.str(name, default="1" if default else "0").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}.")


def host_port_list(env: environ.Env, name: str) -> frozenset[tuple[str, int]]:
    """Parse a comma-separated list of host:port pairs such as 127.0.0.1:8765."""
    pairs = set()
    for item in env.list(name, default=[]):
        host, sep, port = item.strip().rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ImproperlyConfigured(f"{name} entries must be host:port, got {item!r}.")
        pairs.add((host.lower(), int(port)))
    return frozenset(pairs)


def positive_number(env: environ.Env, name: str, default: float) -> float:
    """Read a number greater than zero, refusing anything else."""
    raw = env.str(name, default=str(default)).strip()
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}.") from None
    if not value > 0 or value == float("inf"):
        raise ImproperlyConfigured(f"{name} must be a positive number, got {raw!r}.")
    return value


def secret_key(env: environ.Env, *, database_engine: str, var_dir: Path) -> str:
    """SECRET_KEY from the environment; generated once under var/ only for embedded SQLite.

    Every host of a PostgreSQL deployment must share one key: resolve cursors and
    sessions signed on one host are checked on another. A key made up per host would
    break them silently, so such a service refuses to start instead.
    """
    value = env.str("SECRET_KEY", default="")
    if value:
        return value
    if database_engine != "django.db.backends.sqlite3":
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. On PostgreSQL every host must share one secret key "
            "(cursors and sessions signed on one host are checked on another), so none is "
            "generated: set SECRET_KEY to the same long random value on every host, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'."
        )
    return development_secret_key(var_dir)


def development_secret_key(var_dir: Path) -> str:
    """Return the development SECRET_KEY kept under var/, creating it once."""
    path = var_dir / "secret_key"
    if not path.exists():
        var_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def bounded_int(env: environ.Env, name: str, default: int, *, minimum: int, maximum: int) -> int:
    """Read an integer in [minimum, maximum], refusing anything else by name."""
    raw = env.str(name, default=str(default)).strip()
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}.") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, got {value}.")
    return value


def ip_network_list(
    env: environ.Env, name: str
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Parse a comma-separated list of addresses or CIDR blocks such as 10.0.0.0/8."""
    networks = []
    for item in env.list(name, default=[]):
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} entries must be IP addresses or CIDR blocks, got {item!r}."
            ) from None
    return tuple(networks)


def public_base_url(env: environ.Env, name: str, fallback: str) -> str:
    """Read the service's own base URL (scheme, host, optional port), refusing anything else."""
    value = env.str(name, default="").strip() or fallback
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.path not in {"", "/"}
        or parts.query
        or parts.fragment
    ):
        raise ImproperlyConfigured(
            f"{name} must be a base URL such as https://attest.example, got {value!r}."
        )
    return value.rstrip("/")


_RATE = re.compile(r"(\d+)/(\d*)([smhd])")


def request_rate(env: environ.Env, name: str, default: str) -> str:
    """Read a rate such as ``600/m`` (or ``10/5m``), refusing anything else."""
    value = env.str(name, default=default).strip()
    match = _RATE.fullmatch(value)
    # A count or a window of 0 (``10/0m``) would refuse every request or divide by zero.
    if match is None or int(match.group(1)) < 1 or int(match.group(2) or 1) < 1:
        raise ImproperlyConfigured(f"{name} must look like 600/m (count/unit), got {value!r}.")
    return value


def optional_base_url(env: environ.Env, name: str, default: str) -> str:
    """Read an http(s) base URL without query or fragment; an empty value turns it off."""
    value = env.str(name, default=default).strip()
    if not value:
        return ""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ImproperlyConfigured(f"{name} is not a URL: {value!r}.") from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ImproperlyConfigured(f"{name} must be an http(s) URL or empty, got {value!r}.")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ImproperlyConfigured(
            f"{name} must be a base URL without query, fragment or credentials, got {value!r}."
        )
    return value.rstrip("/")


# Strict enough to be safe inside a User-Agent comment: no spaces, parentheses or separators.
_EMAIL = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")


def optional_email(env: environ.Env, name: str) -> str:
    """Read an e-mail address such as ops@example.org, or nothing."""
    value = env.str(name, default="").strip()
    if value and not _EMAIL.fullmatch(value):
        raise ImproperlyConfigured(f"{name} must be an e-mail address, got {value!r}.")
    return value
