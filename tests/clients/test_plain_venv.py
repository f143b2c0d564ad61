"""``pip install ./clients/python`` into a fresh venv, with no Django and no checkout: the
attest command checks a receipt the real service issued, fully offline from a saved JWKS.

Slow-ish (a venv and its installs, from the package index or pip's cache), but it is the
one test that the client needs nothing of the service's environment.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attest_client import Attest
from tests.live_service import ROOT

pytestmark = pytest.mark.timeout(900)


def run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=600, **kwargs
    )


def test_attest_check_runs_in_a_plain_venv_with_only_the_client(service, tmp_path):
    source = tmp_path / "client"
    shutil.copytree(
        ROOT / "clients" / "python",
        source,
        ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"),
    )
    venv = tmp_path / "venv"
    created = run(sys.executable, "-m", "venv", venv)
    assert created.returncode == 0, created.stderr
    python = venv / "bin" / "python"
    installed = run(python, "-m", "pip", "install", "--quiet", source)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    found = run(python, "-c", "import importlib.util as u; print(u.find_spec('django'))")
    assert found.stdout.strip() == "None"  # Django is not there at all

    with Attest(service.url) as client:
        sample, jwks = client.sample_quote(), client.jwks()
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(sample))
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks))
    checked = run(venv / "bin" / "attest", "check", answer, "--jwks", keys, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1].startswith("VALID")

    forged = dict(sample, tier="paid")
    answer.write_text(json.dumps(forged))
    refused = run(venv / "bin" / "attest", "check", answer, "--jwks", keys, "-q", cwd=tmp_path)
    assert refused.returncode == 8 and refused.stdout.startswith("INVALID (answer")

    modules = run(
        python,
        "-c",
        "import sys, attest_client, attest_client.cli; print('django' in sys.modules)",
        cwd=tmp_path,
    )
    assert modules.stdout.strip() == "False", modules.stderr
