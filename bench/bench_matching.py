"""Matching engine on real prose, beside rapidfuzz, edlib and ``casefold().find()``, interleaved.

Every case runs all its contenders in one process, one call each per round in
turn, for ROUNDS rounds; the figure is the median of the rounds, in the
calling thread's CPU time (``time.thread_time``): every contender is
single-threaded C or numpy, and on the shared machine (load averages of 5 to
17) wall time swung by 5x from one round to the next. Texts come from
``bench/corpus.py`` (real English prose, licences and package documents, real
Chinese and Japanese). edlib is given the threshold's edit limit ``k``
(``mode="HW", task="distance", k=k``: its fastest honest setting) on
case-folded bytes made before timing; rapidfuzz is given the threshold as its
``score_cutoff``. Quotes are present (0, 5 or 15 % edits) or absent (from
text after the page).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path

import edlib
import numpy as np
from rapidfuzz import fuzz

from attest_core.normalise import normalise
from attest_core.passages import find_passages
from bench.corpus import cjk_prose, english_prose, licence_prose, repeated_share, web_page
from verification.engine.html_text import html_text
from verification.engine.injection import injection_flags
from verification.engine.match import MatchTooCostly, match_quote, max_edits

KB, MB = 1_000, 1_000_000
ROUNDS = 7
# BENCH_MATCHING_SIZES (in KB, comma-separated) narrows the fuzzy grids for a quick run.
SIZES = tuple(
    int(kb) * KB for kb in os.environ.get("BENCH_MATCHING_SIZES", "100,1000,5000").split(",")
)
QUOTES = (200, 1_000)
EDIT_RATES = (0.0, 0.05, 0.15)
THRESHOLDS = (0.9, 0.8)
ABSENT_ROUNDS = 5
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


_TEXTS: dict[str, Callable[[int], str]] = {
    "English": english_prose,
    "licences": licence_prose,
    "CJK": cjk_prose,
}


def _page(kind: str, size: int) -> str:
    return _TEXTS[kind](size)


def _quote(text: str, length: int, rate: float, kind: str) -> str:
    middle = len(text) // 2
    quote = text[middle : middle + length]
    alphabet = "abcdefghijklmnopqrstuvwxyz " if kind != "CJK" else text[:20_000]
    return with_edits(quote, rate, alphabet)


def _absent(kind: str, size: int, length: int) -> str:
    """A quote from the same source, after the page's end: not on the page."""
    quote = _page(kind, size + 20_000)[size + 5_000 : size + 5_000 + length]
    assert quote not in _page(kind, size)
    return quote


def edlib_inputs(text: str, quote: str) -> tuple[bytes, bytes] | None:
    """Case-folded quote and page as edlib takes them fastest: bytes, not str.

    ASCII goes as is. Other text has the quote's characters mapped to the bytes
    1..255 and every other character of the page to byte 0 (edlib takes 256
    symbols; a character not in the quote matches none of it, so the distance is
    unchanged). The mapping is done before timing starts: edlib is timed on its
    alignment alone, which flatters it. None when the quote has more than 255
    distinct characters, which edlib cannot align exactly.
    """
    folded_text, folded_quote = text.casefold(), quote.casefold()
    if folded_text.isascii() and folded_quote.isascii():
        return folded_quote.encode("ascii"), folded_text.encode("ascii")
    symbols = {c: i + 1 for i, c in enumerate(sorted(set(folded_quote)))}
    if len(symbols) > 255:
        return None
    table = np.zeros(0x110000, dtype=np.uint8)
    for c, i in symbols.items():
        table[ord(c)] = i
    codes = np.frombuffer(folded_text.encode("utf-32-le"), dtype=np.uint32)
    return bytes(table[ord(c)] for c in folded_quote), table[codes].tobytes()


def _edlib_k(q: bytes, t: bytes, k: int) -> int:
    return edlib.align(q, t, mode="HW", task="distance", k=k)["editDistance"]


def _agrees(found: object, distance: int) -> str:
    """Attest found a span exactly when edlib found one within k (its distance: -1 for none).

    edlib's k bounds the edits only: at a low threshold its best span may lie within
    k edits yet score under the threshold (``1 - d / max(m, L)``), which Attest
    answers with none; such a row says so instead of "yes".
    """
    attest_found = getattr(found, "match", "none") != "none"
    if attest_found == (distance >= 0):
        return "yes"
    return "within k, scores below t" if distance >= 0 else "NO"


def _answer(found: object) -> str:
    if isinstance(found, str):
        return found
    if found.match == "none":
        return "none"
    return f"{found.match} {found.score} at {found.start}-{found.end}"


_HEADER = (
    "| page | quote | edits | threshold | k | Attest | edlib(k) | vs edlib(k) | rapidfuzz "
    "| vs rapidfuzz | Attest's answer | edlib(k) distance | same found |"
)


def _cell(text: str, quote: str, threshold: float, rounds: int) -> tuple[dict, int]:
    """One cell: Attest, edlib with the threshold's k and rapidfuzz with its cutoff, interleaved."""
    k = max_edits(len(quote), threshold)
    contenders: dict[str, Callable[[], object]] = {
        "attest": lambda: _refused_or(lambda: match_quote(text, quote, threshold=threshold)),
        "rapidfuzz": lambda: fuzz.partial_ratio_alignment(
            quote, text, processor=str.casefold, score_cutoff=threshold * 100
        ),
    }
    inputs = edlib_inputs(text, quote)
    if inputs is not None:
        contenders["edlib"] = lambda: _edlib_k(*inputs, k)
    return interleaved(contenders, rounds=rounds), k


def _row(size: int, length: int, edits: str, threshold: float, got: dict, k: int) -> str:
    a, r, found = got["attest"][0], got["rapidfuzz"][0], got["attest"][1]
    if "edlib" in got:
        e, distance = got["edlib"]
        edlib_cells = f"{e:.2f} | {e / a:.2f}x"
        tail = f"{distance} | {_agrees(found, distance)}"
    else:
        edlib_cells, tail = "n/a (> 255 symbols) | n/a", "n/a | n/a"
    return (
        f"| {_size(size)} | {length} | {edits} | {threshold} | {k} | {a:.2f} | {edlib_cells} "
        f"| {r:.2f} | {r / a:.1f}x | {_answer(found)} | {tail} |"
    )


def fuzzy_grid(kind: str, sizes: tuple[int, ...]) -> dict[tuple[int, int, float], float]:
    """Present quotes (0/5/15 % edits) at thresholds 0.9 and 0.8; Attest's medians at 0.9."""
    ours: dict[tuple[int, int, float], float] = {}
    print(
        f"\nFuzzy, {kind}, present quotes (ms of thread CPU time, medians of {ROUNDS} "
        "interleaved rounds; ratios: the other tool's time over Attest's)\n"
    )
    print(_HEADER)
    print("|---" * 13 + "|")
    for size in sizes:
        text = _page(kind, size)
        for length in QUOTES:
            for rate in EDIT_RATES:
                quote = _quote(text, length, rate, kind)
                for threshold in THRESHOLDS:
                    got, k = _cell(text, quote, threshold, ROUNDS)
                    if threshold == THRESHOLDS[0]:
                        ours[(size, length, rate)] = got["attest"][0]
                    print(_row(size, length, f"{rate:.0%}", threshold, got, k), flush=True)
    return ours


def absent_grid(kind: str, sizes: tuple[int, ...]) -> None:
    """Quotes from text after the page, at thresholds 0.9, 0.8 and 0.5."""
    print(
        f"\nFuzzy, {kind}, absent quotes (ms of thread CPU time, medians of {ABSENT_ROUNDS} "
        "interleaved rounds)\n"
    )
    print(_HEADER)
    print("|---" * 13 + "|")
    for size in sizes:
        text = _page(kind, size)
        for length in QUOTES:
            quote = _absent(kind, size, length)
            for threshold in (*THRESHOLDS, 0.5):
                got, k = _cell(text, quote, threshold, ABSENT_ROUNDS)
                print(_row(size, length, "absent", threshold, got, k), flush=True)


def per_megabyte(ours: dict[tuple[int, int, float], float]) -> None:
    """Slope of Attest's time over page size: what each extra megabyte costs."""
    print("\nPer-megabyte cost of Attest's fuzzy match at 0.9 ((5 MB - 100 KB) / 4.9 MB)\n")
    print("| quote | edits | ms per MB |")
    print("|---|---|---|")
    for length in QUOTES:
        for rate in EDIT_RATES:
            slope = (ours[(5 * MB, length, rate)] - ours[(100 * KB, length, rate)]) / 4.9
            print(f"| {length} | {rate:.0%} | {slope:.2f} |")


def _refused_or(call: Callable[[], object]) -> object:
    try:
        return call()
    except MatchTooCostly as refused:
        return f"refused: {refused.code} ({refused.reason})"


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
    "Page reading" is the three together, as a request runs them; "before" runs the
    normalisation and injection modules of ``BENCH_BEFORE`` (loaded with ``git show``)
    in the same rounds, and their answers (text and flags) are compared with today's.
    """
    old_normalise = _module_at(
        BEFORE, "clients/python/src/attest_core/normalise.py", "bench_old_normalise"
    )
    old_injection = _module_at(BEFORE, "verification/engine/injection.py", "bench_old_injection")
    old_normalise.prepare()
    old_injection.prepare()

    def reading(page: str, normalise_: Callable, flags_: Callable) -> tuple[str, list[str]]:
        read = html_text(page)
        return normalise_(read.text).text, flags_(read.text, read.hidden_text)

    print(
        f"\nEvery request's text preparation (ms of thread CPU time, medians of {3 * ROUNDS}; "
        f"before: {BEFORE})\n"
    )
    print(
        "| page | visible text | html_text | normalise | injection flags | page reading "
        "| page reading before | before / now | same text and flags |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for size in (100 * KB, 1 * MB):
        page = web_page(size)
        read = html_text(page)
        got = interleaved(
            {
                "html_text": lambda p=page: html_text(p),
                "normalise": lambda t=read.text: normalise(t),
                "flags": lambda t=read.text, h=read.hidden_text: injection_flags(t, h),
                "reading": lambda p=page: reading(p, normalise, injection_flags),
                "before": lambda p=page: reading(
                    p, old_normalise.normalise, old_injection.injection_flags
                ),
            },
            rounds=3 * ROUNDS,
        )
        now, before = got["reading"][0], got["before"][0]
        same = "yes" if got["reading"][1] == got["before"][1] else "NO"
        print(
            f"| {_size(size)} of HTML | {len(read.text):,} characters | "
            f"{got['html_text'][0]:.2f} | {got['normalise'][0]:.2f} | {got['flags'][0]:.2f} "
            f"| {now:.2f} | {before:.2f} | {before / now:.2f}x | {same} |",
            flush=True,
        )


def peak_memory(size: int) -> None:
    text = english_prose(size)
    quote = _quote(text, 1_000, 0.05, "English")
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
    quote = _quote(text, 1_000, 0.05, "English")
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


def fuzzy() -> None:
    per_megabyte(fuzzy_grid("English", SIZES))
    absent_grid("English", SIZES)
    for kind in ("licences", "CJK"):
        text = _page(kind, MB)
        print(f"\n{kind}: {repeated_share(text):.1%} of 1 MB's 30-character windows repeated")
        fuzzy_grid(kind, (100 * KB, MB))
        absent_grid(kind, (100 * KB, MB))


# The revision ``before`` compares with (``BENCH_BEFORE``): this round (issue 38) started from it.
BEFORE = os.environ.get("BENCH_BEFORE", "52e547d")


def _module_at(revision: str, path: str, name: str) -> types.ModuleType:
    """The module at ``path`` as it was at ``revision`` (``git show``), loaded beside today's."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{path}"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:{path}", "exec"), module.__dict__)
    return module


def before_rows() -> None:
    """The engine before this round against now and edlib(k), interleaved, answers compared.

    Passages on English 100 KB to 5 MB; fuzzy on the 100 KB English cells (the
    sub-millisecond ones, where Attest's own steps weigh most).
    """
    old_passages = _module_at(
        BEFORE, "clients/python/src/attest_core/passages.py", "bench_old_passages"
    )
    old_match = _module_at(BEFORE, "verification/engine/match.py", "bench_old_match")
    print(f"\nBefore ({BEFORE}) and now, interleaved (ms of thread CPU time, medians)\n")
    print("| case | before | now | before / now | edlib(k) | edlib(k) / now | same answer |")
    print("|---|---|---|---|---|---|---|")
    for size in SIZES:
        text = english_prose(size)
        got = interleaved(
            {
                "before": lambda t=text: old_passages.find_passages(t, CLAIM),
                "now": lambda t=text: find_passages(t, CLAIM),
            }
        )
        (b, old), (n, new) = got["before"], got["now"]
        # Both modules' results print alike (the class names are the same): compare them so.
        same = "yes" if repr(old) == repr(new) else "NO"
        print(f"| passages, {_size(size)} | {b:.1f} | {n:.1f} | {b / n:.2f}x | | | {same} |")
    text = _page("English", 100 * KB)
    for length in QUOTES:
        for rate in EDIT_RATES[1:]:
            quote = _quote(text, length, rate, "English")
            for threshold in (*THRESHOLDS, 0.5):
                label = f"fuzzy 100 KB, {length} chars, {rate:.0%} edits, t={threshold}"
                _before_row(old_match, label, text, quote, threshold)
    for size in SIZES[:2]:
        text = _page("English", size)
        for length in QUOTES:
            quote = _absent("English", size, length)
            for threshold in (0.8, 0.5):
                label = f"absent {_size(size)}, {length} chars, t={threshold}"
                _before_row(old_match, label, text, quote, threshold)


def _before_row(
    old_match: types.ModuleType, label: str, text: str, quote: str, threshold: float
) -> None:
    """One fuzzy case: the engine before, now and edlib(k), interleaved; answers compared."""
    k = max_edits(len(quote), threshold)
    q, t = edlib_inputs(text, quote)  # type: ignore[misc]
    got = interleaved(
        {
            "before": lambda: old_match.match_quote(text, quote, threshold=threshold),
            "now": lambda: match_quote(text, quote, threshold=threshold),
            "edlib": lambda: _edlib_k(q, t, k),
        },
        rounds=4 * ROUNDS + 1 if len(text) < MB else ROUNDS,
    )
    (b, old), (n, new), (e, _) = got["before"], got["now"], got["edlib"]
    same = "yes" if _answer(old) == _answer(new) else "NO"
    print(
        f"| {label} | {b:.2f} | {n:.2f} | {b / n:.2f}x | {e:.2f} | {e / n:.2f}x | {same} |",
        flush=True,
    )


def memory() -> None:
    peak_memory(5 * MB)
    process_rss(5 * MB)


PARTS = {
    "fuzzy": fuzzy,
    "absent": lambda: absent_grid("English", SIZES),
    "present": lambda: per_megabyte(fuzzy_grid("English", SIZES)),
    "exact": exact_rows,
    "passages": passages_rows,
    "preparation": preparation_rows,
    "memory": memory,
    "before": before_rows,
}


def main() -> None:
    """Every part, or those named in BENCH_MATCHING_PARTS (comma-separated)."""
    wanted = os.environ.get("BENCH_MATCHING_PARTS", ",".join(PARTS)).split(",")
    unknown = sorted(set(wanted) - set(PARTS))
    if unknown:
        raise SystemExit(f"unknown BENCH_MATCHING_PARTS {unknown}; have {sorted(PARTS)}")
    print(f"load average at the start: {os.getloadavg()}")
    for name in wanted:
        PARTS[name]()
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
