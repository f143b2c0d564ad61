"""`make run`'s gunicorn keeps to its own instance: no control socket shared per user."""

from __future__ import annotations

import subprocess

from tests.live_service import GUNICORN, ROOT


def test_make_run_opens_no_control_socket_shared_with_other_instances():
    help_text = subprocess.run(
        [str(GUNICORN), "--help"], capture_output=True, text=True, check=True
    ).stdout
    # The installed gunicorn (27) opens ~/.gunicorn/gunicorn.ctl unless told not to.
    assert "--no-control-socket" in help_text
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    serve = planned[planned.index("gunicorn attest.wsgi") :]
    assert "--no-control-socket" in serve.split("--forwarded-allow-ips")[0]
