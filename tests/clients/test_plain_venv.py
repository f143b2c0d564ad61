"""``pip install ./clients/python`` into a fresh venv, with no Django and no checkout: the
client alone checks a receipt the real service issued, fully offline from a saved JWKS, and
pays with a payer key from the command line, from Python and through ``attest mcp``.

Slow-ish (a venv and its installs, from the package index or pip's cache, built once per
test session), but these are the tests that the client needs nothing of the service's
environment: the service's venv has every extra of the x402 SDK, the client's has only
what its own package asks for.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from attest_client import Attest
from tests.clients.conftest import QUOTE
from tests.live_service import ROOT

pytestmark = pytest.mark.timeout(900)


def run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=600, **kwargs
    )


@dataclass
class ClientVenv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def attest(self) -> Path:
        return self.root / "bin" / "attest"

    @staticmethod
    def env(**variables: str) -> dict[str, str]:
        """This process's environment without anything naming the service's venv, the
        checkout or an Attest setting, plus ``variables``."""
        kept = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("ATTEST_", "PYTHON", "VIRTUAL_ENV", "DJANGO_"))
        }
        return {**kept, **variables}


@pytest.fixture(scope="session")
def client_venv(tmp_path_factory) -> ClientVenv:
    """A venv holding the client package and nothing else it did not ask for."""
    tmp = tmp_path_factory.mktemp("plain-venv")
    source = tmp / "client"
    shutil.copytree(
        ROOT / "clients" / "python",
        source,
        ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"),
    )
    venv = ClientVenv(tmp / "venv")
    created = run(sys.executable, "-m", "venv", venv.root)
    assert created.returncode == 0, created.stderr
    installed = run(venv.python, "-m", "pip", "install", "--quiet", source, env=venv.env())
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def test_attest_check_runs_in_a_plain_venv_with_only_the_client(service, client_venv, tmp_path):
    venv = client_venv
    found = run(venv.python, "-c", "import importlib.util as u; print(u.find_spec('django'))")
    assert found.stdout.strip() == "None"  # Django is not there at all

    with Attest(service.url) as client:
        sample, jwks = client.sample_quote(), client.jwks()
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(sample))
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks))
    checked = run(venv.attest, "check", answer, "--jwks", keys, cwd=tmp_path, env=venv.env())
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1].startswith("VALID")

    forged = dict(sample, tier="paid")
    answer.write_text(json.dumps(forged))
    refused = run(venv.attest, "check", answer, "--jwks", keys, "-q", cwd=tmp_path, env=venv.env())
    assert refused.returncode == 8 and refused.stdout.startswith("INVALID (answer")

    modules = run(
        venv.python,
        "-c",
        "import sys, attest_client, attest_client.cli; print('django' in sys.modules)",
        cwd=tmp_path,
        env=venv.env(),
    )
    assert modules.stdout.strip() == "False", modules.stderr


def test_the_plain_client_pays_from_the_command_line_and_checks_the_paid_receipt(
    service, client_venv, payer_key, tmp_path
):
    venv, landed = client_venv, service.facilitator.landed
    paying = venv.env(ATTEST_URL=service.url, ATTEST_PAYER_KEY=payer_key)
    done = run(
        venv.attest, "verify-quote", service.article, QUOTE, "--match", "exact",
        cwd=tmp_path, env=paying,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    assert answer["tier"] == "paid" and answer["result"]["match"] == "exact"
    assert service.facilitator.landed == landed + 1

    saved = tmp_path / "paid.json"
    saved.write_text(done.stdout)
    jwks = f"{service.url}/.well-known/jwks.json"
    checked = run(venv.attest, "check", saved, "--jwks", jwks, cwd=tmp_path, env=paying)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1].startswith("VALID")


PAY_FROM_PYTHON = """
import json, os, sys
from attest_client import Attest

with Attest(os.environ["SERVICE"], payer_key=os.environ["KEY"]) as attest:
    answer = attest.verify_quote(url=sys.argv[1], quote=sys.argv[2], match="exact")
print(json.dumps({"tier": answer["tier"], "match": answer["result"]["match"]}))
"""


def test_the_plain_client_pays_from_python_with_a_payer_key(
    service, client_venv, payer_key, tmp_path
):
    venv, landed = client_venv, service.facilitator.landed
    environment = venv.env(SERVICE=service.url, KEY=payer_key)
    done = run(
        venv.python, "-c", PAY_FROM_PYTHON, service.article, QUOTE, cwd=tmp_path, env=environment
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"tier": "paid", "match": "exact"}
    assert service.facilitator.landed == landed + 1


def test_the_plain_clients_attest_mcp_lists_the_tools_and_pays_a_priced_one(
    service, client_venv, payer_key, tmp_path
):
    """Driven from outside over stdio with the MCP SDK's client, as an MCP host would."""
    venv, landed = client_venv, service.facilitator.landed
    server = StdioServerParameters(
        command=str(venv.attest),
        args=["mcp"],
        env=venv.env(ATTEST_URL=service.url, ATTEST_PAYER_KEY=payer_key),
        cwd=tmp_path,
    )

    async def session():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            tools = {tool.name for tool in (await mcp.list_tools()).tools}
            arguments = {"url": service.article, "quote": QUOTE, "match": "exact"}
            return tools, await mcp.call_tool("verify_quote", arguments)

    tools, paid = anyio.run(session)
    assert {"verify_quote", "verify_quotes", "verify_citations", "fetch_page"} <= tools
    assert paid.isError is False, paid.content
    assert paid.structuredContent["tier"] == "paid"
    assert paid.structuredContent["result"]["match"] == "exact"
    assert service.facilitator.landed == landed + 1
