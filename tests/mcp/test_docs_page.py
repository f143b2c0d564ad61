"""/docs/mcp's example runs as shown, against the real service that serves the page, its
tool table is the server's, and each host's set-up line reaches the tools."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import lxml.html
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

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
    listed = {row.text_content() for row in tree.xpath("//table[@id='tools']//td[1]/code")}
    assert listed == {tool.name for tool in TOOLS}


def _server(line: str, kind: str) -> dict:
    """What a host would start or reach from one set-up line: Claude Code's command line,
    Cursor's JSON or VS Code's `code --add-mcp JSON`."""
    if line.startswith("{"):
        return json.loads(line)["mcpServers"]["attest"]
    words = shlex.split(line)
    if words[:2] == ["code", "--add-mcp"]:
        return json.loads(words[2])
    assert words[:3] == ["claude", "mcp", "add"], line
    if kind == "http":
        headers = dict(
            words[i + 1].split(": ", 1) for i, word in enumerate(words) if word == "--header"
        )
        return {"url": words[words.index("--transport") + 3], "headers": headers}
    env = dict(words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "-e")
    command = words[words.index("--") + 1 :]
    return {"command": command[0], "args": command[1:], "env": env}


async def _tools(server: dict, credential: str) -> set[str]:
    if "url" in server:
        headers = {
            name: value.replace("$ATTEST_CREDENTIAL", credential)
            for name, value in server.get("headers", {}).items()
        }
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(server["url"], http_client=http) as (read, write, _),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            return {tool.name for tool in (await mcp.list_tools()).tools}
    command = Path(sys.executable).parent / server["command"]  # the client's console script
    parameters = StdioServerParameters(
        command=str(command), args=server["args"], env={**os.environ, **server["env"]}
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        return {tool.name for tool in (await mcp.list_tools()).tools}


def test_every_set_up_line_on_the_mcp_page_reaches_the_tools(service):
    """Each host's line (Claude Code, Cursor, VS Code; HTTP and stdio through attest mcp),
    read as that host reads it, and the server it names listing the tools."""
    page = httpx.get(f"{service.url}/docs/mcp", timeout=30, trust_env=False)
    lines = [
        (pre.get("data-setup"), pre.text_content())
        for pre in lxml.html.fromstring(page.text).xpath("//pre[@data-setup]")
    ]
    assert [kind for kind, _ in lines] == ["http"] * 4 + ["stdio"] * 3
    free = {tool.name for tool in TOOLS if not tool.ledger}
    for kind, line in lines:
        server = _server(line, kind)
        assert server.get("url", server.get("env", {}).get("ATTEST_URL")).startswith(service.url)
        tools = anyio.run(_tools, server, service.credential)
        expected = {tool.name for tool in TOOLS} if "ATTEST_CREDENTIAL" in line else free
        assert tools == expected, line
