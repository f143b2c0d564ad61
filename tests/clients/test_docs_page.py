"""/docs/client's examples run as shown, against the real service that serves the page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import lxml.html
import pytest

pytestmark = pytest.mark.timeout(600)


def _examples(service) -> dict[str, tuple[str, str]]:
    page = httpx.get(f"{service.url}/docs/client", timeout=30, trust_env=False)
    assert page.status_code == 200
    tree = lxml.html.fromstring(page.text)
    shown = {}
    for run in tree.xpath("//pre[@data-run]"):
        output = run.xpath("following-sibling::pre[@data-output][1]")[0]
        shown[run.get("data-run")] = (run.text_content(), output.text_content())
    return shown


def test_the_client_page_examples_print_what_the_page_shows(service, tmp_path):
    examples = _examples(service)
    assert set(examples) == {"python", "shell"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"

    code, output = examples["python"]
    assert service.url in code
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == output.strip()

    commands, output = examples["shell"]
    ran = subprocess.run(
        ["bash", "-e", "-c", commands],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == output.strip()
