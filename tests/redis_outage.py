"""A Redis cache that does not answer: the real django-redis client, configured as the
service configures it from CACHE_URL, against a port that refuses or a peer that never
replies."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import environ
from django.test import override_settings

from attest.config import cache_config


@contextmanager
def _cache_at(url: str) -> Iterator[None]:
    saved = os.environ.get("CACHE_URL")
    os.environ["CACHE_URL"] = url
    try:
        config = cache_config(environ.Env(), default=url)
    finally:
        if saved is None:
            del os.environ["CACHE_URL"]
        else:
            os.environ["CACHE_URL"] = saved
    with override_settings(CACHES={"default": config}):
        yield


@contextmanager
def redis_down() -> Iterator[None]:
    """Redis stopped: every connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with _cache_at(f"redis://127.0.0.1:{port}/0"):
        yield


@contextmanager
def redis_hung() -> Iterator[None]:
    """Redis wedged: connections are accepted and never answered."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        with _cache_at(f"redis://127.0.0.1:{listener.getsockname()[1]}/0"):
            yield
