"""The transparency page's worked example runs as shown, against the service in process."""

from __future__ import annotations

import io
import json
import re
import shlex
from urllib.parse import urlsplit

import lxml.html
import pytest

from attest_client.check import main as check_main
from tests.receipts.samples import issue_sample

pytestmark = pytest.mark.django_db

ASSIGN_JQ = re.compile(r"(?P<name>[A-Z]+)=\$\(jq \.(?P<key>\w+) (?P<file>\S+)\)")


def _run_block(block, client, tmp_path, variables: dict[str, str]) -> None:
    code = out = None
    for line in block.xpath(".//*[@data-run]")[0].text_content().strip().splitlines():
        assigned = ASSIGN_JQ.fullmatch(line)
        if assigned:
            document = json.loads((tmp_path / assigned["file"]).read_text())
            variables[assigned["name"]] = str(document[assigned["key"]])
            continue
        for name, value in variables.items():
            line = line.replace(f"${name}", value)
        words = shlex.split(line)
        if words[0] == "curl":
            assert words[-2] == ">", line
            url = urlsplit(words[-3])
            target = url.path + (f"?{url.query}" if url.query else "")
            response = client.get(target)
            assert response.status_code == 200, (line, response.content)
            (tmp_path / words[-1]).write_bytes(response.content)
            continue
        assert words[:3] == ["python", "-m", "receipts.check"], line
        stdout = io.StringIO()
        code, out = check_main(words[3:], stdout=stdout), stdout.getvalue()
    assert code == int(block.xpath(".//*[@data-exit]")[0].text_content()), out
    lines = out.splitlines()
    for shown in block.xpath(".//*[@data-output]")[0].text_content().splitlines():
        if shown.endswith("…"):
            assert any(line.startswith(shown[:-1]) for line in lines), (shown, out)
        else:
            assert shown in lines, (shown, out)


def test_the_transparency_pages_example_runs_as_shown(client, tmp_path, monkeypatch):
    for i in range(4):  # a log with leaves before the sample's: a proof with a real path
        issue_sample(quote=f"earlier {i}")
    page = client.get("/docs/transparency")
    assert page.status_code == 200
    blocks = lxml.html.fromstring(page.content).xpath("//*[@data-commands]")
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    variables: dict[str, str] = {}
    for block in blocks:
        _run_block(block, client, tmp_path, variables)
    assert json.loads((tmp_path / "proof.json").read_text())["audit_path"]
