"""The memory tools over MCP: recall_facts ranks by `query`, list_changes and
list_subjects answer as their routes do, and another project's credential sees nothing."""

from __future__ import annotations

import httpx
import pytest

from tests.clients.conftest import _manage
from tests.mcp.test_mcp import answer, run, session

pytestmark = pytest.mark.timeout(600)

MESSAGES = [
    {
        "id": "mem-m1",
        "role": "user",
        "text": "I live in Berlin. I'm allergic to peanuts.",
        "occurred_at": "2026-01-04T10:00:00Z",
    },
    {
        "id": "mem-m2",
        "role": "user",
        "text": "I moved to Munich in March.",
        "occurred_at": "2026-03-04T10:00:00Z",
    },
]


def test_memory_tools_answer_as_their_routes_and_only_to_their_project(service):
    other = _manage(service.env, "create_project", "memory-other").strip().splitlines()[-1]

    async def test():
        async with session(service.url, service.credential) as mcp:
            out = {
                "ingest": await mcp.call_tool(
                    "ingest_messages", {"subject": "mem-u", "messages": MESSAGES}
                ),
                "ranked": await mcp.call_tool(
                    "recall_facts", {"subject": "mem-u", "query": "where does she live now?"}
                ),
                "changes": await mcp.call_tool("list_changes", {"subject": "mem-u"}),
                "subjects": await mcp.call_tool("list_subjects", {"limit": 200}),
            }
        async with session(service.url, other) as mcp:
            out["other_ranked"] = await mcp.call_tool(
                "recall_facts", {"subject": "mem-u", "query": "where does she live now?"}
            )
            out["other_changes"] = await mcp.call_tool("list_changes", {})
            out["other_subjects"] = await mcp.call_tool("list_subjects", {})
        return out

    out = run(test)
    for name, result in out.items():
        assert result.isError is False, (name, result.content)
    ranked = answer(out["ranked"])["facts"]
    assert ranked[0]["predicate"] == "lives_in" and ranked[0]["value"] == "Munich"
    assert 0 < ranked[0]["score"] <= 1
    types = [(c["type"], c["predicate"]) for c in answer(out["changes"])["changes"]]
    assert ("superseded", "lives_in") in types and types[0][0] == "created"
    subjects = {s["subject"]: s for s in answer(out["subjects"])["subjects"]}
    assert subjects["mem-u"]["facts"] == 3
    assert subjects["mem-u"]["last_observed_at"] == "2026-03-04T10:00:00Z"
    # Field for field the REST route's answer.
    headers = {"Authorization": f"Bearer {service.credential}"}
    rest = httpx.post(
        service.url + "/v1/changes", json={"subject": "mem-u"}, headers=headers
    ).json()
    assert [c["id"] for c in rest["changes"]] == [
        c["id"] for c in answer(out["changes"])["changes"]
    ]
    # Another project's credential: no ranked facts, no changes, no subjects.
    assert answer(out["other_ranked"]) == {"facts": []}
    assert answer(out["other_changes"]) == {"changes": []}
    assert answer(out["other_subjects"]) == {"subjects": []}
