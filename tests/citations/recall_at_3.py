"""Recall@3 of ranked recall through the REST routes, over an evaluation file.

The file is the evaluation set's ``conversations.json`` (tests/citations/eval/README.md):
``{"conversations": [{"subject", "messages": [{"id", "role", "at", "text", …}],
"questions": [{"question", "answer": {"predicate", "value"}}]}]}``; other keys are
ignored. Each conversation is ingested through ``POST /v1/observations`` one message a
request, in order, as a chat sends them; each question is then asked through
``POST /v1/recall`` with ``query`` and ``limit`` 3, and counts when a fact with the
answer's predicate and value (compared by the extractor's value key) is among the three.

Used by ``bench/bench_recall.py`` (either database, prints the figure and the misses)
and by ``tests/citations/test_recall_at_3.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citations.extract.extractor import value_key


@dataclass
class RecallAt3:
    questions: int = 0
    hits: int = 0
    # Questions whose answering fact the ledger holds as current (the extractor found it):
    # the ranking's own share of the figure, apart from what extraction missed.
    held: int = 0
    held_hits: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.hits / self.questions if self.questions else 0.0

    @property
    def ranking_score(self) -> float:
        return self.held_hits / self.held if self.held else 0.0


def load(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["conversations"]


def ingest(client: Any, conversation: dict[str, Any]) -> None:
    """Send the conversation's messages one a request, in order."""
    for message in conversation["messages"]:
        body = {
            "subject": conversation["subject"],
            "messages": [
                {
                    "id": message["id"],
                    "role": message["role"],
                    "text": message["text"],
                    "occurred_at": message["at"],
                }
            ],
        }
        response = client.post("/v1/observations", body, format="json")
        assert response.status_code == 201, response.content


def _matches(fact: dict[str, Any], answer: dict[str, str]) -> bool:
    return fact["predicate"] == answer["predicate"] and value_key(fact["value"]) == value_key(
        answer["value"]
    )


def ask(client: Any, conversations: list[dict[str, Any]]) -> RecallAt3:
    """Ask every question of the (already ingested) conversations; recall@3 and misses."""
    result = RecallAt3()
    for conversation in conversations:
        listed = client.post(
            "/v1/recall", {"subject": conversation["subject"], "limit": 200}, format="json"
        )
        current = listed.json()["facts"]
        for item in conversation.get("questions", []):
            held = any(_matches(fact, item["answer"]) for fact in current)
            result.held += held
            body = {"subject": conversation["subject"], "query": item["question"], "limit": 3}
            response = client.post("/v1/recall", body, format="json")
            assert response.status_code == 200, response.content
            top = response.json()["facts"]
            result.questions += 1
            if any(_matches(fact, item["answer"]) for fact in top):
                result.hits += 1
                result.held_hits += 1
            else:
                result.misses.append(
                    {
                        "subject": conversation["subject"],
                        "question": item["question"],
                        "answer": item["answer"],
                        "held": held,
                        "top": [(f["predicate"], f["value"], f["score"]) for f in top],
                    }
                )
    return result


def recall_at_3(client: Any, conversations: list[dict[str, Any]]) -> RecallAt3:
    for conversation in conversations:
        ingest(client, conversation)
    return ask(client, conversations)
