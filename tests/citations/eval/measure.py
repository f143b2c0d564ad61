"""Measure the built-in extractor on the evaluation set: precision and recall per predicate.

``python -m tests.citations.eval.measure`` prints the table (Markdown, as in
bench/README.md); ``--misses`` lists every wrong or missed fact as well; ``--held-out``
measures the held-out conversations (conversations_2.json) instead, and ``--third`` the
third set (conversations_3.json), for information.

The set (conversations.json, sentences.json, described in README.md here) was written
apart from the rule corpus (tests/citations/corpus), before the rules that read everyday
phrasing, and the rules are not tuned on it. Every user message of a conversation and
every standalone sentence is one labelled item. A conversation is read in order, as the
ingest service reads it: a correction ("I meant pecans, not peanuts") states its
replacement fact under the predicate of the fact it corrects, found among the facts the
conversation's earlier messages gave. A found fact is right when its (predicate, value)
is among the item's labels, values compared as the ledger compares them (``value_key``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from citations.extract.extractor import correction_target, read, value_key
from tests.citations.corpus.measure import Score
from tests.citations.corpus.measure import table as corpus_table

HERE = Path(__file__).parent
CONVERSATIONS = HERE / "conversations.json"
# The second, held-out set: other people and phrasings, written before recall ranked by
# the question's intent and never tuned on (README.md here).
HELD_OUT = HERE / "conversations_2.json"
# The third set: everyday voices (terse, lower case, lists, past states), written and
# measured before the rules for everyday phrasing were widened, and never tuned on.
THIRD = HERE / "conversations_3.json"
SENTENCES = HERE / "sentences.json"


@dataclass(frozen=True)
class Item:
    """One labelled message: its text, when it was sent, the facts it states."""

    text: str
    at: datetime
    facts: tuple[tuple[str, str], ...]
    conversation: str = ""  # "" for a standalone sentence


@dataclass
class EvalScore(Score):
    items: int = 0
    corrections_right: int = 0
    corrections_labelled: int = 0
    wrong_corrections: list[str] = field(default_factory=list)


def conversations(path: Path = CONVERSATIONS) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["conversations"]


def sentences() -> dict:
    return json.loads(SENTENCES.read_text(encoding="utf-8"))


def conversation_items(path: Path = CONVERSATIONS) -> list[Item]:
    """The conversations' user messages in order, each a labelled item."""
    return [
        Item(m["text"], datetime.fromisoformat(m["at"]), _pairs(m["facts"]), c["id"])
        for c in conversations(path)
        for m in c["messages"]
        if m["role"] == "user"
    ]


def items() -> list[Item]:
    """Every labelled item: the conversations' user messages in order, then the sentences."""
    found = conversation_items()
    standalone = sentences()
    sent = datetime.fromisoformat(standalone["sent"])
    found += [Item(s["text"], sent, _pairs(s["facts"])) for s in standalone["sentences"]]
    return found


def all_texts() -> list[str]:
    """Every text of the set, assistant messages included (for the disjointness check)."""
    texts = [m["text"] for c in conversations() for m in c["messages"]]
    return texts + [s["text"] for s in sentences()["sentences"]]


def _pairs(facts: list[list[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((predicate, value) for predicate, value in facts)


def read_in_order(rows: list[Item]) -> list[list[tuple[str, str, str]]]:
    """Per item, the facts read from it as (predicate, value, value_key).

    Within a conversation the facts read so far are kept, newest last, so that a
    correction finds the fact it corrects and takes that fact's predicate.
    """
    believed: list[tuple[str, str]] = []
    conversation = None
    out = []
    for row in rows:
        if row.conversation != conversation or not row.conversation:
            believed, conversation = [], row.conversation
        reading = read(row.text, occurred_at=row.at)
        facts = [(f.predicate, f.value, f.value_key) for f in reading.facts]
        for correction in reading.corrections:
            target = correction_target(correction, believed)
            if target is None:
                continue
            predicate = believed.pop(target)[0]
            facts.append((predicate, correction.value, correction.value_key))
        believed += [(predicate, key) for predicate, _, key in facts]
        out.append(facts)
    return out


def measure(rows: list[Item] | None = None) -> EvalScore:
    rows = items() if rows is None else rows
    score = EvalScore()
    for row, facts in zip(rows, read_in_order(rows), strict=True):
        score.items += 1
        score.messages += 1
        score.negatives += not row.facts
        expected = Counter((p, value_key(v)) for p, v in row.facts)
        for predicate, value, key in facts:
            if expected[(predicate, key)] > 0:
                expected[(predicate, key)] -= 1
                score.right[predicate] += 1
            else:
                score.wrong[predicate] += 1
                score.misses.append(f"wrong  {predicate}={value!r}: {row.text}")
        for (predicate, value), count in expected.items():
            if count > 0:
                score.missed[predicate] += count
                score.misses.append(f"missed {predicate}={value!r}: {row.text}")
    return score


def table(score: EvalScore) -> str:
    conversation_items = sum(
        1 for c in conversations() for m in c["messages"] if m["role"] == "user"
    )
    questions = sum(len(c["questions"]) for c in conversations())
    head = (
        f"Evaluation set: {len(conversations())} conversations "
        f"({sum(len(c['messages']) for c in conversations())} messages, "
        f"{conversation_items} from the user), {len(sentences()['sentences'])} standalone "
        f"sentences, {questions} questions."
    )
    body = corpus_table(score).replace(" on ", " on the evaluation set's ", 1)
    return head + "\n" + body.replace("messages", "labelled items", 1)


if __name__ == "__main__":
    if "--held-out" in sys.argv or "--third" in sys.argv:
        path, name = (HELD_OUT, "Held-out") if "--held-out" in sys.argv else (THIRD, "Third")
        result = measure(conversation_items(path))
        print(f"{name} conversations ({result.items} user messages):")
        print(corpus_table(result))
    else:
        result = measure()
        print(table(result))
    if "--misses" in sys.argv:
        print("\n".join(["", *result.misses]))
