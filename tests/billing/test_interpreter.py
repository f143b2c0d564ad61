"""Loading the payment stack must not weaken the interpreter for every other route."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A fresh process: Django set up the way a server worker does it, then one hostile body.
DEEP_BODY_SCRIPT = """
import sys
import django
django.setup()
from django.test import Client
client = Client(raise_request_exception=False)
response = client.generic(
    "POST", "/v1/receipt/verify", "[" * 200_000, content_type="application/json"
)
print(sys.getrecursionlimit(), response.status_code)
"""


def test_payment_stack_leaves_the_default_recursion_limit():
    import eth_account  # noqa: F401  (imports py_ecc, which raises the limit on import)

    assert sys.getrecursionlimit() <= 1000


def test_deeply_nested_json_body_does_not_crash_the_worker():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "attest.settings"}
    done = subprocess.run(
        [sys.executable, "-c", DEEP_BODY_SCRIPT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    limit, status = done.stdout.split()[-2:]
    assert int(limit) <= 1000
    assert status.isdigit()
