"""/docs/mcp's example runs as shown, against the real service that serves the page, and
its tool table is the server's."""

from __future__ import annotations

import subprocess
import sys

import httpx
import lxml.html
import pytest

from wiring.mcp.tools import TOOLS

pytestmark = pytest.mark.timeout(600)


def test_the_mcp_page_example_prints_what_the_page_shows(service):
    page = httpx.get(f"{service.url}/docs/mcp", timeout=30, trust_env=False)
    assert page.status_code == 200
    tree = lxml.html.fromstring(page.text)
    [run] = tree.xpath("//pre[@data-run='python']")
    output = run.xpath("following-sibling::pre[@data-output][1]")[0].text_content()
    code = run.text_content()
    assert f"{service.url}/mcp" in code
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == output.strip()
    listed = {row.text_content() for row in tree.xpath("//table//td[1]/code")}
    assert listed == {tool.name for tool in TOOLS}
