"""Loading the payment stack must not weaken the interpreter for every other route, and must
not slow every management command down."""

from __future__ import annotations

from tests.django_script import run_django_script

# A fresh process loaded the way a gunicorn worker loads it, then one hostile body.
DEEP_BODY_SCRIPT = """
import sys
import attest.wsgi
from django.test import Client
client = Client(raise_request_exception=False)
response = client.generic(
    "POST", "/v1/receipt/verify", "[" * 200_000, content_type="application/json"
)
print(sys.getrecursionlimit(), response.status_code)
"""

# What the served process has once the payment stack is loaded (py_ecc raised the limit).
SERVED_LIMIT_SCRIPT = """
import sys
import attest.wsgi
import py_ecc
print(sys.getrecursionlimit())
"""

# What `manage.py <command>` loads: the apps and the URLconf, as `manage.py check` does.
COMMAND_SCRIPT = """
import sys
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
print(sorted(m for m in ("eth_account", "web3", "x402.mechanisms.evm") if m in sys.modules))
"""


def test_payment_stack_leaves_the_default_recursion_limit():
    assert int(run_django_script(SERVED_LIMIT_SCRIPT).split()[-1]) <= 1000


def test_deeply_nested_json_body_does_not_crash_the_worker():
    limit, status = run_django_script(DEEP_BODY_SCRIPT).split()[-2:]
    assert int(limit) <= 1000
    assert status.isdigit()


def test_management_commands_do_not_import_the_evm_stack():
    assert run_django_script(COMMAND_SCRIPT).strip().splitlines()[-1] == "[]"
