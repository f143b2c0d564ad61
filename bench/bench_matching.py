"""Matching engine: fuzzy on 1 and 5 MB beside rapidfuzz and edlib, passages, memory."""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from pydoc_data.topics import topics

import edlib
from rapidfuzz import fuzz

from verification.engine.match import match_quote
from verification.engine.normalise import normalise
from verification.engine.passages import find_passages

MB = 1_000_000
QUOTE_LENGTH = 1_000
EDIT_RATE = 0.05


def natural_text(size: int, seed: int = 7) -> str:
    """English prose of ``size`` characters: a word-level Markov chain over Python's own docs.

    The chain (order 2, trained on ``pydoc_data.topics``, which ships with
    Python) gives text with natural word and letter statistics that never
    repeats a 1,000-character stretch, so a quote has one true place.
    """
    words = " ".join(topics.values()).split()
    chain: dict[tuple[str, str], list[str]] = {}
    for a, b, c in zip(words, words[1:], words[2:], strict=False):
        chain.setdefault((a, b), []).append(c)
    rng = random.Random(seed)
    keys = list(chain)
    out: list[str] = []
    total = 0
    a, b = rng.choice(keys)
    while total < size * 1.05:
        following = chain.get((a, b))
        if not following:
            a, b = rng.choice(keys)
            continue
        c = rng.choice(following)
        out.append(c)
        total += len(c) + 1
        a, b = b, c
    return normalise(" ".join(out)).text[:size]


def with_edits(quote: str, rate: float, seed: int = 3) -> str:
    """``quote`` with ``rate * len(quote)`` random substitutions, insertions and deletions."""
    rng = random.Random(seed)
    chars = list(quote)
    for _ in range(int(len(quote) * rate)):
        i = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz ")
        elif op == 1:
            chars.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz "))
        else:
            del chars[i]
    return "".join(chars)


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Best and median wall time in milliseconds, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return min(times), statistics.median(times), result


def fuzzy_row(size: int, repeat: int) -> None:
    text = natural_text(size)
    middle = size // 2
    quote = with_edits(text[middle : middle + QUOTE_LENGTH], EDIT_RATE)
    ours = timed(lambda: match_quote(text, quote), repeat)
    rapid = timed(lambda: fuzz.partial_ratio_alignment(quote, text), repeat)
    hw = timed(lambda: edlib.align(quote, text, mode="HW"), repeat)
    found = ours[2]
    print(
        f"| fuzzy, {size // MB} MB, {len(quote)}-char quote, 5% edits "
        f"| {ours[0]:.1f} ({ours[1]:.1f}) "
        f"| {rapid[0]:.1f} ({rapid[1]:.1f}) | {hw[0]:.1f} ({hw[1]:.1f}) "
        f"| {rapid[0] / ours[0]:.1f}x | {hw[0] / ours[0]:.1f}x |"
    )
    print(
        f"|   found: {found.match} score {found.score} at {found.start}-{found.end}; "
        f"edlib distance {hw[2]['editDistance']} | | | | | |"
    )
    absent = natural_text(QUOTE_LENGTH * 2, seed=99)[:QUOTE_LENGTH]
    gone = timed(lambda: match_quote(text, absent), repeat)
    print(f"| absent quote, {size // MB} MB | {gone[0]:.1f} ({gone[1]:.1f}) | | | | |")
    present = text[middle + 5_000 : middle + 5_000 + QUOTE_LENGTH]
    exact = timed(lambda: match_quote(text, present, mode="exact"), repeat)
    print(f"| exact, all occurrences, {size // MB} MB | {exact[0]:.1f} ({exact[1]:.1f}) | | | | |")


def passages_row(size: int, repeat: int) -> None:
    text = natural_text(size)
    claim = "The interpreter reported an exception when the attribute lookup failed in 2025"
    best, median, result = timed(lambda: find_passages(text, claim), repeat)
    print(
        f"| passages, {size // MB} MB ({result.occurrences} passages, best {result.score}) "
        f"| {best:.1f} ({median:.1f}) | | | | |"
    )


def peak_memory(size: int) -> None:
    text = natural_text(size)
    quote = with_edits(text[size // 2 : size // 2 + QUOTE_LENGTH], EDIT_RATE)
    tracemalloc.start()
    match_quote(text, quote)
    _, fuzzy_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    find_passages(text, "The interpreter reported an exception in 2025")
    _, passages_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"| peak memory allocated by one call, {size // MB} MB page | fuzzy "
        f"{fuzzy_peak / MB:.0f} MB, passages {passages_peak / MB:.0f} MB | | | | |"
    )


# The process's resident high-water mark in KiB. VmHWM starts afresh at exec,
# unlike ru_maxrss, which a child inherits from the (large) benchmark parent.
_HIGH_WATER = (
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            return int(line.split()[1])\n"
    "    import resource\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
)


def process_rss(size: int) -> None:
    """Peak resident memory of a fresh process that loads a page and matches on it."""
    text = natural_text(size)
    quote = with_edits(text[size // 2 : size // 2 + QUOTE_LENGTH], EDIT_RATE)
    with tempfile.TemporaryDirectory() as tmp:
        page, claim = Path(tmp, "page.txt"), Path(tmp, "quote.txt")
        page.write_text(text, encoding="utf-8")
        claim.write_text(quote, encoding="utf-8")
        script = _HIGH_WATER + (
            "import sys\n"
            "from pathlib import Path\n"
            "from verification.engine.match import match_quote\n"
            "from verification.engine.passages import find_passages\n"
            "t = Path(sys.argv[1]).read_text(encoding='utf-8')\n"
            "q = Path(sys.argv[2]).read_text(encoding='utf-8')\n"
            "before = peak()\n"
            "assert match_quote(t, q).match == 'fuzzy'\n"
            "find_passages(t, 'The interpreter reported an exception in 2025')\n"
            "print(before, peak())\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, str(page), str(claim)],
            capture_output=True,
            check=True,
            text=True,
        ).stdout.split()
    before, after = (int(v) / 1024 for v in out)
    print(
        f"| peak RSS of a fresh process, {size // MB} MB page, fuzzy then passages "
        f"| {after:.0f} MB ({before:.0f} MB before matching) | | | | |"
    )


def main() -> None:
    print("Times in ms: best (median). Ratios are the other tool's best time over ours.\n")
    print(
        "| case | attest | rapidfuzz partial_ratio_alignment | edlib HW | vs rapidfuzz | vs edlib |"
    )
    print("|---|---|---|---|---|---|")
    fuzzy_row(1 * MB, repeat=7)
    fuzzy_row(5 * MB, repeat=3)
    passages_row(1 * MB, repeat=7)
    peak_memory(5 * MB)
    process_rss(5 * MB)


if __name__ == "__main__":
    main()
