"""Recall@3 of ranked recall over an evaluation file, through the REST routes in process.

Ingests each conversation one message a request and asks each question with ``query``
and ``limit`` 3 (tests/citations/recall_at_3.py, which documents the file's format), then
prints recall@3, the time per question and every miss with the three facts that came
back. On a scratch SQLite file, or on ``DATABASE_URL`` (PostgreSQL) under a new project.

``BENCH_RECALL_FILE`` names the file (default: the evaluation set,
tests/citations/eval/conversations.json, else the harness's sample,
tests/citations/recall_sample.json). ``python -m bench recall``.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALUATION_SET = ROOT / "tests/citations/eval/conversations.json"
SAMPLE = ROOT / "tests/citations/recall_sample.json"


def _evaluation_file() -> Path:
    named = os.environ.get("BENCH_RECALL_FILE")
    if named:
        return Path(named)
    return EVALUATION_SET if EVALUATION_SET.exists() else SAMPLE


def main() -> None:
    from bench.setup import django_on_a_scratch_database

    django_on_a_scratch_database("recall", keep_database_url=True)
    os.environ.setdefault("ATTEST_LEDGER_RATE", "100000000/m")
    from django.db import connection
    from rest_framework.test import APIClient

    from citations.services import project_create
    from tests.citations.recall_at_3 import ask, ingest, load

    path = _evaluation_file()
    conversations = load(path)
    _, token = project_create(name=f"bench-recall-{uuid.uuid4().hex[:8]}")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    for conversation in conversations:
        ingest(client, conversation)
    began = time.perf_counter()
    result = ask(client, conversations)
    per_question = (time.perf_counter() - began) * 1000 / max(result.questions, 1)
    messages = sum(len(c["messages"]) for c in conversations)
    print(
        f"{connection.vendor}: recall@3 {result.score:.3f} ({result.hits}/{result.questions} "
        f"questions, {len(conversations)} conversations, {messages} messages, {path.name}); "
        f"{result.ranking_score:.3f} ({result.held_hits}/{result.held}) of those whose "
        f"answer the extractor stored; {per_question:.1f} ms a question, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for miss in result.misses:
        stored = "" if miss["held"] else " (answer not stored)"
        print(f"  miss: {miss['subject']}: {miss['question']!r} → {miss['answer']}{stored}")
        for predicate, value, score in miss["top"]:
            print(f"        {score:.3f} {predicate} {value!r}")


if __name__ == "__main__":
    main()
