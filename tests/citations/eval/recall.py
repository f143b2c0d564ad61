"""Recall@3 over the evaluation set's questions, through the real ingest service and recall.

Each conversation is ingested (``observations_ingest``) under its own subject, then each
question is asked through the recall selector with ``query`` and ``limit`` 3; a question
counts when a fact with the answer's predicate and value (``value_key``) is among them.
Run inside a test database: ``tests/citations/test_eval_recall.py`` prints the figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from citations.extract.extractor import value_key
from citations.models import Project
from citations.selectors.facts import FactView, recalled_facts
from citations.services.ingest import MessageIn, observations_ingest
from tests.citations.eval.measure import CONVERSATIONS, conversations


@dataclass
class RecallScore:
    questions: int = 0
    hits: int = 0
    stored: int = 0  # questions whose answering fact is current after ingest
    misses: list[str] = field(default_factory=list)
    not_stored: list[str] = field(default_factory=list)

    def recall_at_3(self) -> float:
        return self.hits / self.questions if self.questions else 0.0


def ingest_all(project: Project, path: Path = CONVERSATIONS) -> None:
    for conversation in conversations(path):
        messages = [
            MessageIn(m["id"], m["role"], m["text"], datetime.fromisoformat(m["at"]))
            for m in conversation["messages"]
        ]
        # One message a request, in order, as a chat sends them.
        for message in messages:
            observations_ingest(
                project=project,
                subject_id=conversation["subject"],
                messages=[message],
                actor="eval",
            )


def recall_at_3(project: Project, path: Path = CONVERSATIONS) -> RecallScore:
    score = RecallScore()
    for conversation in conversations(path):
        subject = conversation["subject"]
        every = recalled_facts(project=project, subject_id=subject, limit=100).facts
        for question in conversation["questions"]:
            answer = (question["answer"]["predicate"], value_key(question["answer"]["value"]))
            score.questions += 1
            if any(_key(f) == answer for f in every):
                score.stored += 1
            else:
                score.not_stored.append(f"{subject}: {question['question']!r} -> {answer}")
            top = recalled_facts(
                project=project, subject_id=subject, query=question["question"], limit=3
            ).facts
            if any(_key(f) == answer for f in top):
                score.hits += 1
            else:
                score.misses.append(f"{subject}: {question['question']!r} -> {answer}")
    return score


def _key(fact: FactView) -> tuple[str, str]:
    return fact.fact.predicate, fact.fact.value_key
