"""Measure the built-in extractor on the labelled corpus: precision and recall per predicate.

Run ``python -m tests.citations.corpus.measure`` for the table (Markdown, as in
docs/ledger.md), or ``--misses`` to list every wrong or missed fact as well.

A found fact is right when its (predicate, value) is among the message's labels, values
compared as the ledger compares them (``value_key``: case, articles and spacing aside).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from citations.extract.extractor import EXTRACTOR_VERSION, extract, value_key
from citations.extract.predicates import BUILTIN_NAMES

CORPUS = Path(__file__).with_name("messages.jsonl")
# Every message is read as sent at this time: relative dates resolve against it.
SENT = datetime(2026, 3, 4, 10, 11, 58, tzinfo=UTC)


@dataclass
class Score:
    right: Counter[str] = field(default_factory=Counter)
    wrong: Counter[str] = field(default_factory=Counter)
    missed: Counter[str] = field(default_factory=Counter)
    messages: int = 0
    negatives: int = 0
    misses: list[str] = field(default_factory=list)

    def precision(self, predicate: str | None = None) -> float:
        right, wrong = self._counts(predicate)[:2]
        return right / (right + wrong) if right + wrong else 1.0

    def recall(self, predicate: str | None = None) -> float:
        right, _, missed = self._counts(predicate)
        return right / (right + missed) if right + missed else 1.0

    def _counts(self, predicate: str | None) -> tuple[int, int, int]:
        if predicate is None:
            return self.right.total(), self.wrong.total(), self.missed.total()
        return self.right[predicate], self.wrong[predicate], self.missed[predicate]


def load() -> list[dict]:
    with CORPUS.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def measure(rows: list[dict] | None = None) -> Score:
    score = Score()
    for row in rows if rows is not None else load():
        score.messages += 1
        score.negatives += not row["expected"]
        expected = Counter((p, value_key(v)) for p, v in row["expected"])
        for fact in extract(row["text"], occurred_at=SENT):
            key = (fact.predicate, fact.value_key)
            if expected[key] > 0:
                expected[key] -= 1
                score.right[fact.predicate] += 1
            else:
                score.wrong[fact.predicate] += 1
                score.misses.append(f"wrong  {fact.predicate}={fact.value!r}: {row['text']}")
        for (predicate, value), count in expected.items():
            if count > 0:
                score.missed[predicate] += count
                score.misses.append(f"missed {predicate}={value!r}: {row['text']}")
    return score


def table(score: Score) -> str:
    lines = [
        f"Measured with `{EXTRACTOR_VERSION}` on {score.messages} messages "
        f"({score.negatives} with no fact to find).",
        "",
        "| predicate | labelled | found | right | precision | recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in BUILTIN_NAMES:
        right, wrong, missed = score._counts(name)
        lines.append(
            f"| `{name}` | {right + missed} | {right + wrong} | {right} "
            f"| {score.precision(name):.2f} | {score.recall(name):.2f} |"
        )
    right, wrong, missed = score._counts(None)
    lines.append(
        f"| **all** | {right + missed} | {right + wrong} | {right} "
        f"| {score.precision():.3f} | {score.recall():.3f} |"
    )
    return "\n".join(lines)


def compact_table(score: Score, columns: int = 3) -> str:
    """The README's form: precision / recall per predicate, ``columns`` predicates a row."""
    cells = [
        f"`{name}` {score.precision(name):.2f} / {score.recall(name):.2f}" for name in BUILTIN_NAMES
    ]
    cells += [""] * (-len(cells) % columns)
    lines = ["| " + " | ".join(["predicate: precision / recall"] * columns) + " |"]
    lines.append("|" + "---|" * columns)
    for start in range(0, len(cells), columns):
        lines.append("| " + " | ".join(cells[start : start + columns]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    result = measure()
    print(compact_table(result) if "--compact" in sys.argv else table(result))
    if "--misses" in sys.argv:
        print("\n".join(["", *result.misses]))
