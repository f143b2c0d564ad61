"""What loading the app costs and leaves behind: `make run` forks gunicorn's workers from a
master that loaded attest.wsgi (--preload), which is only safe while the load opens no
connection and starts no thread."""

from __future__ import annotations

from django.conf import settings

from tests.django_script import REPO, run_django_script

LOADED_SCRIPT = """
import threading
import attest.wsgi
from django.db import connections
print(sum(c.connection is not None for c in connections.all()), threading.active_count())
"""


def test_loading_the_wsgi_app_opens_no_connection_and_starts_no_thread():
    assert run_django_script(LOADED_SCRIPT).split() == ["0", "1"]


def test_make_run_forks_its_workers_from_a_preloaded_master():
    makefile = (REPO / "Makefile").read_text()
    [serve] = [line for line in makefile.splitlines() if "gunicorn attest.wsgi" in line]
    assert "--preload" in serve


TABLES_SCRIPT = """
import sys
import attest_core.normalise as n
before = n._tables.cache_info().currsize
if sys.argv[1] == "wsgi":
    import attest.wsgi
print(before, n._tables.cache_info().currsize)
"""


def _tables_built(how: str) -> list[str]:
    return run_django_script(TABLES_SCRIPT, how).split()


def test_the_normaliser_s_tables_are_built_by_the_server_not_by_an_import():
    """Importing the normaliser (as every manage.py command does) builds nothing; the WSGI
    app builds its tables before the first request, in gunicorn's preloaded master."""
    assert _tables_built("import") == ["0", "0"]
    assert _tables_built("wsgi") == ["0", "1"]


# What only a request needs, each a tenth of a second or more to import: the payment SDK
# (and pydantic under it), numpy, the JWS stack, the Redis client, the page fetcher, the
# HTML and PDF readers, the matcher's and the injection scan's C extensions, the MCP SDK.
REQUEST_ONLY = (
    "x402",
    "pydantic",
    "eth_account",
    "mcp",
    "numpy",
    "joserfc",
    "cryptography",
    "redis",
    "httpx",
    "lxml",
    "pypdfium2",
    "pypdf",
    "rapidfuzz",
    "edlib",
    "ahocorasick",
)
# And the project's own modules that only a request needs: the API views (the URLconf
# names them by path), the pipeline, billing's services, the extractor (its pattern tables
# compile at import), the docs pages' figures.
PROJECT_REQUEST_ONLY = (
    "verification.api.views",
    "citations.api.views",
    "receipts.views",
    "verification.pipeline.pages",
    "billing.services",
    "citations.extract.extractor",
    "wiring.docs_context",
)

IMPORTED_SCRIPT = """
import sys
from django.core.management import execute_from_command_line
if sys.argv[1] == "wsgi":
    import attest.wsgi
else:
    execute_from_command_line(["manage.py", *sys.argv[1:]])
print("imported:", *sorted(name for name in sys.argv[0].split(",") if name in sys.modules))
"""


def _imported(*argv: str, watched: tuple[str, ...] = REQUEST_ONLY) -> list[str]:
    script = IMPORTED_SCRIPT.replace("sys.argv[0]", repr(",".join(watched)))
    output = run_django_script(script, *argv)
    [line] = [line for line in output.splitlines() if line.startswith("imported:")]
    return line.split()[1:]


def test_a_manage_py_command_imports_nothing_only_a_request_needs():
    """`check` imports the URLconf (its URL checks walk every pattern) and every admin
    module, the most any command loads at start-up; none of it may reach the request-only
    packages, each of which a command would pay for in start-up time. Counted by module,
    not timed, so a loaded machine cannot make it flaky."""
    # With a Redis cache configured, Django's cache checks make the cache backend, which
    # imports the Redis client (and cryptography under it): the deployment's own choice.
    cache = {"redis", "cryptography"} if "redis" in settings.CACHES["default"]["BACKEND"] else set()
    assert set(_imported("check")) <= cache
    assert _imported("help") == []


def test_a_manage_py_command_imports_no_view_and_no_service():
    assert _imported("check", watched=PROJECT_REQUEST_ONLY) == []


def test_a_served_process_imports_them_before_its_first_request():
    """gunicorn --preload's master loads attest.wsgi, whose serving hooks import every view
    (attest.lazyviews.load_views), so no first request waits for an import. The MCP SDK
    is the one left to its first call (wiring.urls.mcp_endpoint): few deployments see one."""
    assert _imported("wsgi") == sorted(set(REQUEST_ONLY) - {"mcp"})
