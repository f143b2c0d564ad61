"""Django for an in-process benchmark: settings from the environment, a throwaway SQLite."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_host_secret_key() -> None:
    """PostgreSQL wants a SECRET_KEY every host shares; a benchmark is one host (its child
    processes inherit the environment), so a fresh one does when none is set."""
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))


def django_on_a_scratch_database(name: str, *, keep_database_url: bool = False) -> str:
    """Set Django up on a migrated SQLite file in a new temporary directory; return it.

    With ``keep_database_url`` a ``DATABASE_URL`` already in the environment (PostgreSQL,
    say) is used instead of the scratch file.
    """
    workdir = tempfile.mkdtemp(prefix=f"attest-bench-{name}-")
    database = f"sqlite:///{workdir}/bench.sqlite3"
    if keep_database_url:
        os.environ.setdefault("DATABASE_URL", database)
    else:
        os.environ["DATABASE_URL"] = database
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    one_host_secret_key()
    os.environ["ATTEST_VAR_DIR"] = workdir
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # not a line per request
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return workdir


def page_server(html: str) -> tuple[subprocess.Popen, int]:
    """Serve ``html`` as /article.html (and a robots.txt allowing all) from a static HTTP
    server on a free loopback port; the caller stops the process."""
    root = Path(tempfile.mkdtemp(prefix="attest-bench-pages-"))
    (root / "article.html").write_text(html)
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return server, port
