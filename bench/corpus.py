"""Benchmark texts: real English prose from this machine, and Chinese text drawn like real text.

English: the paragraphs of the manual pages under ``/usr/share/man`` (sections
1 to 8, roff markup stripped) and the docstrings of Python's standard library,
in a fixed order. A paragraph is kept only when most of its 30-character
windows are new, so the many near-copies among manual pages (one per
architecture, per translation source, per library function) do not make the
text repetitive: the share of repeated 30-character windows stays near that
of a single real document. Every figure states that share
(``repeated_share``).

Chinese: no Chinese prose of megabytes ships here, so characters are drawn
from a Zipf-Mandelbrot distribution over 3,500 characters (weight
``1 / (rank + 3)``: the commonest character is 3.6 % of the text, the top 100
49 %, the top 1,000 82 %, close to real Chinese), with a full stop or a comma
after 8 to 25 characters.
"""

from __future__ import annotations

import ast
import gzip
import random
import re
import sysconfig
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import numpy as np

from attest_core.normalise import normalise

WINDOW = 30
MAN_ROOT = Path("/usr/share/man")
# roff escapes: fonts, named characters, strings, numbers, size changes, the rest.
_ROFF_ESCAPE = re.compile(
    r"\\f(?:\[[^\]]*\]|\(..|.)|\\\(..|\\\[[^\]]*\]|\\[*n](?:\(..|\[[^\]]*\]|.)|\\s[-+]?\d|\\."
)
_PARAGRAPH_BREAKS = (".PP", ".SH", ".SS", ".TP", ".IP", ".LP", ".P ", ".sp", ".HP")


def _man_paragraphs() -> Iterator[str]:
    for path in sorted(MAN_ROOT.glob("man[1-8]/*.gz")):
        try:
            source = gzip.decompress(path.read_bytes()).decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        lines: list[str] = []
        for line in source.splitlines():
            if line.startswith((".", "'")):
                if lines and line.startswith(_PARAGRAPH_BREAKS):
                    yield " ".join(lines)
                    lines = []
                continue
            plain = _ROFF_ESCAPE.sub(lambda m: "-" if m.group() == "\\-" else "", line).strip()
            if plain:
                lines.append(plain)
        if lines:
            yield " ".join(lines)


def _docstrings() -> Iterator[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        if {"test", "tests", "site-packages", "idlelib"} & set(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    yield doc


def _window_hashes(text: str) -> np.ndarray:
    """A 64-bit hash of every WINDOW-character window of ``text``."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    count = len(codes) - WINDOW + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    h = np.zeros(count, dtype=np.uint64)
    for j in range(WINDOW):
        h *= np.uint64(0x100000001B3)
        h ^= codes[j : j + count]
    return h


def repeated_share(text: str) -> float:
    """Share of the text's 30-character windows that occur more than once in it."""
    hashes = _window_hashes(text)
    if not len(hashes):
        return 0.0
    _, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    return float((counts[inverse] > 1).mean())


@cache
def english_prose(size: int) -> str:
    """``size`` characters of normalised real English prose (see the module docstring)."""
    seen: set[int] = set()
    kept: list[str] = []
    total = 0
    sources = (p for source in (_man_paragraphs(), _docstrings()) for p in source)
    for paragraph in sources:
        text = normalise(paragraph).text
        if len(text) < 200 or not text.isascii():
            continue
        hashes = set(_window_hashes(text).tolist())
        if len(hashes & seen) > 0.02 * len(hashes):
            continue
        seen |= hashes
        kept.append(text)
        total += len(text) + 1
        if total >= size:
            return " ".join(kept)[:size]
    raise RuntimeError(f"only {total:,} characters of prose found, {size:,} wanted")


@cache
def chinese_text(size: int, seed: int = 5) -> str:
    """``size`` characters of Chinese drawn with realistic character frequencies."""
    rng = random.Random(seed)
    characters = [chr(0x4E00 + i) for i in rng.sample(range(0x5000), 3_500)]
    weights = [1 / (rank + 3) for rank in range(1, len(characters) + 1)]
    out: list[str] = []
    total = 0
    while total < size:
        run = rng.randint(8, 25)
        out.extend(rng.choices(characters, weights, k=run))
        out.append("\u3002" if rng.random() < 0.4 else "\uff0c")
        total += run + 1
    return normalise("".join(out)).text[:size]


@cache
def web_page(size: int, seed: int = 11) -> str:
    """An HTML page of about ``size`` bytes of real prose, typeset as web pages are.

    Paragraphs of ``english_prose`` in indented ``<p>`` blocks with links and
    emphasis, apostrophes and quotes curly, dashes long, some no-break spaces
    and accented words, as a page's visible text usually has them.
    """
    rng = random.Random(seed)
    words = english_prose(size).split(" ")
    blocks: list[str] = []
    total = i = 0
    while total < size and i < len(words):
        take = rng.randint(40, 160)
        paragraph = " ".join(words[i : i + take])
        i += take
        paragraph = re.sub(r"'", "\u2019", paragraph)
        paragraph = re.sub(r'"([^"]*)"', "\u201c\\1\u201d", paragraph)
        paragraph = paragraph.replace(" - ", " \u2014 ").replace(" e.g. ", " e.g.\u00a0")
        parts = paragraph.split(" ")
        for _ in range(len(parts) // 25):
            j = rng.randrange(len(parts))
            parts[j] = rng.choice(
                [f'<a href="/w/{j}">{parts[j]}</a>', f"<em>{parts[j]}</em>", "caf\u00e9"]
            )
        block = (
            "\n      <p>"
            + "\n        ".join(" ".join(parts[k : k + 12]) for k in range(0, len(parts), 12))
            + "</p>"
        )
        blocks.append(block)
        total += len(block)
    return (
        "<!doctype html><html><body>\n    <main>" + "".join(blocks) + "\n    </main></body></html>"
    )
