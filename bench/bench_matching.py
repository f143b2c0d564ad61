"""Matching engine on real prose, beside rapidfuzz, edlib and ``casefold().find()``, interleaved.

Every case runs all its contenders in one process, one call each per round in
turn, for ROUNDS rounds; the figure is the median of the rounds, in the
calling thread's CPU time (``time.thread_time``): every contender is
single-threaded C or numpy, and on the shared machine (load averages of 5 to
17) wall time swung by 5x from one round to the next. Texts come from
``bench/corpus.py`` (real English prose, generated Chinese) and each table
states the share of repeated 30-character windows of the text it ran on.
"""

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

import edlib
from rapidfuzz import fuzz

from attest_core.normalise import normalise
from attest_core.passages import find_passages
from bench.corpus import chinese_text, english_prose, repeated_share, web_page
from verification.engine.html_text import html_text
from verification.engine.injection import injection_flags
from verification.engine.match import MatchTooCostly, match_quote

KB, MB = 1_000, 1_000_000
ROUNDS = 7
SIZES = (100 * KB, 1 * MB, 5 * MB)
QUOTES = (200, 1_000)
EDIT_RATES = (0.0, 0.05, 0.10)
CLAIM = "The interpreter reported an exception when the attribute lookup failed in 2025"


def with_edits(quote: str, rate: float, alphabet: str, seed: int = 3) -> str:
    """``quote`` with ``rate * len(quote)`` random substitutions, insertions and deletions."""
    rng = random.Random(seed)
    chars = list(quote)
    for _ in range(round(len(quote) * rate)):
        i = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[i] = rng.choice(alphabet)
        elif op == 1:
            chars.insert(i, rng.choice(alphabet))
        else:
            del chars[i]
    return "".join(chars)


def interleaved(
    contenders: dict[str, Callable[[], object]],
    rounds: int = ROUNDS,
    clock: Callable[[], float] = time.thread_time,
) -> dict:
    """Median milliseconds of each contender, run in turn once per round, and its last result."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    results: dict[str, object] = {}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = clock()
            results[name] = fn()
            times[name].append((clock() - start) * 1000)
    return {name: (statistics.median(t), results[name]) for name, t in times.items()}


def _size(n: int) -> str:
    return f"{n // MB} MB" if n >= MB else f"{n // KB} KB"


def _page(kind: str, size: int) -> str:
    return english_prose(size) if kind == "latin" else chinese_text(size)


def _quote(text: str, length: int, rate: float, kind: str) -> str:
    middle = len(text) // 2
    alphabet = "abcdefghijklmnopqrstuvwxyz " if kind == "latin" else chinese_text(20_000)
    return with_edits(text[middle : middle + length], rate, alphabet)


def fuzzy_grid(kind: str, sizes: tuple[int, ...]) -> dict[tuple[int, int, float], float]:
    """The grid of page sizes, quote lengths and edit rates; Attest's medians by cell."""
    ours: dict[tuple[int, int, float], float] = {}
    print(
        f"\nFuzzy, {kind} text, threshold 0.9 (ms of thread CPU time, medians of {ROUNDS} "
        "interleaved "
        "rounds; ratios: the other tool's time over Attest's)\n"
    )
    print(
        "| page | repeated 30-char windows | quote | edits | Attest | rapidfuzz "
        '`partial_ratio_alignment` | edlib `align(mode="HW")` | vs edlib | vs rapidfuzz '
        "| Attest's answer | edlib distance |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for size in sizes:
        text = _page(kind, size)
        share = repeated_share(text)
        for length in QUOTES:
            for rate in EDIT_RATES:
                quote = _quote(text, length, rate, kind)
                contenders = {
                    "attest": lambda q=quote, t=text: match_quote(t, q),
                    "rapidfuzz": lambda q=quote, t=text: fuzz.partial_ratio_alignment(q, t),
                }
                if kind == "latin":  # edlib takes at most 256 distinct symbols
                    contenders["edlib"] = lambda q=quote, t=text: edlib.align(q, t, mode="HW")
                got = interleaved(contenders)
                a, r = got["attest"][0], got["rapidfuzz"][0]
                e, distance = got.get("edlib", (None, {"editDistance": "n/a"}))
                found = got["attest"][1]
                ours[(size, length, rate)] = a
                versus_edlib = f"{e:.2f} | {e / a:.1f}x" if e else "n/a (> 256 symbols) | n/a"
                print(
                    f"| {_size(size)} | {share:.1%} | {length} | {rate:.0%} | {a:.2f} | {r:.2f} "
                    f"| {versus_edlib} | {r / a:.1f}x | {found.match} {found.score} "
                    f"at {found.start}-{found.end} | {distance['editDistance']} |"
                )
    return ours


def per_megabyte(ours: dict[tuple[int, int, float], float]) -> None:
    """Slope of Attest's time over page size: what each extra megabyte costs."""
    print("\nPer-megabyte cost of Attest's fuzzy match ((5 MB time - 100 KB time) / 4.9 MB)\n")
    print("| quote | edits | ms per MB |")
    print("|---|---|---|")
    for length in QUOTES:
        for rate in EDIT_RATES:
            slope = (ours[(5 * MB, length, rate)] - ours[(100 * KB, length, rate)]) / 4.9
            print(f"| {length} | {rate:.0%} | {slope:.2f} |")


def absent_rows() -> None:
    print("\nAbsent 1,000-character quote on 1 MB (ms of thread CPU time, medians of 5)\n")
    print('| text | threshold | Attest | edlib `align(mode="HW")` | answer |')
    print("|---|---|---|---|---|")
    for kind in ("latin", "cjk"):
        text = _page(kind, MB)
        other = english_prose(MB + 20_000)[MB:] if kind == "latin" else chinese_text(20_000, 9)
        absent = other[5_000:6_000]
        assert absent not in text
        for threshold in (0.9, 0.7, 0.5):
            contenders = {
                "attest": lambda t=text, q=absent, th=threshold: _refused_or(
                    lambda: match_quote(t, q, threshold=th)
                )
            }
            if kind == "latin":
                contenders["edlib"] = lambda t=text, q=absent: edlib.align(q, t, mode="HW")
            got = interleaved(contenders, rounds=5)
            edlib_ms = f"{got['edlib'][0]:.1f}" if "edlib" in got else "n/a (> 256 symbols)"
            answer = got["attest"][1]
            print(
                f"| {kind} | {threshold} | {got['attest'][0]:.1f} | {edlib_ms} "
                f"| {answer if isinstance(answer, str) else answer.match} |"
            )


def _refused_or(call: Callable[[], object]) -> object:
    try:
        return call()
    except MatchTooCostly as refused:
        return f"refused: {refused.code} ({refused.reason})"


def cjk_against_latin() -> None:
    """Chinese and English pages of 1 MB, interleaved cell by cell."""
    fuzzy_grid("cjk", (1 * MB,))
    latin, cjk = _page("latin", MB), _page("cjk", MB)
    print(
        "\nChinese against English, 1 MB each, interleaved (ms of thread CPU time, medians of "
        f"{ROUNDS})\n"
    )
    print("| quote | edits | English | Chinese | Chinese / English |")
    print("|---|---|---|---|---|")
    for length in QUOTES:
        for rate in EDIT_RATES:
            lq, cq = _quote(latin, length, rate, "latin"), _quote(cjk, length, rate, "cjk")
            got = interleaved(
                {
                    "latin": lambda q=lq: match_quote(latin, q),
                    "cjk": lambda q=cq: match_quote(cjk, q),
                }
            )
            a, c = got["latin"][0], got["cjk"][0]
            print(f"| {length} | {rate:.0%} | {a:.2f} | {c:.2f} | {c / a:.2f} |")


def exact_rows() -> None:
    """Timed in the thread's CPU time: at 5 MB, wall time on the shared machine swings 2x."""
    print(
        f"\nExact, ASCII English (ms of thread CPU time, medians of {2 * ROUNDS + 1}; Attest "
        "also counts occurrences)\n"
    )
    print("| page | quote | Attest exact | `casefold().find()` | casefold / Attest |")
    print("|---|---|---|---|---|")
    for size in (1 * MB, 5 * MB):
        text = english_prose(size)
        assert text.isascii()
        present = text[size // 2 : size // 2 + 200].upper()
        absent = english_prose(size + 20_000)[size + 5_000 : size + 5_200]
        for label, quote in (("present (middle, upper case)", present), ("absent", absent)):
            folded = quote.casefold()
            got = interleaved(
                {
                    "attest": lambda t=text, q=quote: match_quote(t, q, mode="exact"),
                    "casefold": lambda t=text, q=folded: t.casefold().find(q),
                },
                rounds=2 * ROUNDS + 1,
                clock=time.thread_time,
            )
            a, c = got["attest"][0], got["casefold"][0]
            print(f"| {_size(size)} | {label} | {a:.2f} | {c:.2f} | {c / a:.2f}x |")


def passages_rows() -> None:
    print(f"\nPassages (ms of thread CPU time, medians of {ROUNDS})\n")
    print("| page | repeated 30-char windows | time | ms per MB | passages, best score |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        text = english_prose(size)
        got = interleaved({"passages": lambda t=text: find_passages(t, CLAIM)})
        ms, result = got["passages"]
        print(
            f"| {_size(size)} | {repeated_share(text):.1%} | {ms:.1f} | {ms / size * MB:.1f} "
            f"| {result.occurrences}, {result.score} |"
        )


def preparation_rows() -> None:
    """HTML text, normalisation and injection flags on a web page, as requests run them.

    Timed in the thread's CPU time, which a busy machine inflates far less than wall time.
    """
    print(f"\nEvery request's text preparation (ms of thread CPU time, medians of {ROUNDS})\n")
    print("| page | visible text | html_text | normalise | injection flags |")
    print("|---|---|---|---|---|")
    for size in (100 * KB, 1 * MB):
        page = web_page(size)
        read = html_text(page)
        got = interleaved(
            {
                "html_text": lambda p=page: html_text(p),
                "normalise": lambda t=read.text: normalise(t),
                "flags": lambda t=read.text, h=read.hidden_text: injection_flags(t, h),
            },
            clock=time.thread_time,
        )
        print(
            f"| {_size(size)} of HTML | {len(read.text):,} characters | "
            f"{got['html_text'][0]:.2f} | {got['normalise'][0]:.2f} | {got['flags'][0]:.2f} |"
        )


def peak_memory(size: int) -> None:
    text = english_prose(size)
    quote = _quote(text, 1_000, 0.05, "latin")
    tracemalloc.start()
    match_quote(text, quote)
    _, fuzzy_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    find_passages(text, CLAIM)
    _, passages_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\nPeak memory allocated by one call on a {_size(size)} page: fuzzy "
        f"{fuzzy_peak / MB:.0f} MB, passages {passages_peak / MB:.0f} MB (tracemalloc)"
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
    text = english_prose(size)
    quote = _quote(text, 1_000, 0.05, "latin")
    with tempfile.TemporaryDirectory() as tmp:
        page, claim = Path(tmp, "page.txt"), Path(tmp, "quote.txt")
        page.write_text(text, encoding="utf-8")
        claim.write_text(quote, encoding="utf-8")
        script = _HIGH_WATER + (
            "import sys\n"
            "from pathlib import Path\n"
            "from verification.engine.match import match_quote\n"
            "from attest_core.passages import find_passages\n"
            "t = Path(sys.argv[1]).read_text(encoding='utf-8')\n"
            "q = Path(sys.argv[2]).read_text(encoding='utf-8')\n"
            "before = peak()\n"
            "assert match_quote(t, q).match == 'fuzzy'\n"
            f"find_passages(t, {CLAIM!r})\n"
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
        f"Peak RSS of a fresh process, {_size(size)} page, fuzzy then passages: "
        f"{after:.0f} MB ({before:.0f} MB before matching)"
    )


def main() -> None:
    latin = fuzzy_grid("latin", SIZES)
    per_megabyte(latin)
    cjk_against_latin()
    absent_rows()
    exact_rows()
    passages_rows()
    preparation_rows()
    peak_memory(5 * MB)
    process_rss(5 * MB)


if __name__ == "__main__":
    main()
