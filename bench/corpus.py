"""Benchmark texts: real English prose from this machine, and Chinese text drawn like real text.

English: the paragraphs of the manual pages under ``/usr/share/man`` (sections
1 to 8, roff markup stripped) and the docstrings of Python's standard library,
in a fixed order. A paragraph is kept only when most of its 30-character
windows are new, so the many near-copies among manual pages (one per
architecture, per translation source, per library function) do not make the
text repetitive: the share of repeated 30-character windows stays near that
of a single real document. Every figure states that share
(``repeated_share``).

Licences and package documents (``licence_prose``): the licence texts under
``/usr/share/common-licenses``, the Debian packages' copyright files, then
their other documents under ``/usr/share/doc`` (READMEs, NEWS, changelogs),
kept paragraph by paragraph under the same rule when a paragraph reads as
sentences (letters and spaces, few slashes): text neither the manual pages nor
the docstrings resemble. Only about 136,000 characters of it are licences.

Real Chinese and Japanese (``cjk_prose``): the translated manual pages under
``/usr/share/man/{zh_CN,zh_TW,ja}`` and the translated messages of the
programs' catalogues under ``/usr/share/locale/{zh_CN,zh_TW,zh_Hans,zh_Hant,
zh_HK,ja}`` (``.mo`` files, read with ``gettext``), each kept when at least a
third of its characters are CJK and most of its windows are new; about 1.3
million characters in all, so CJK figures stop at 1 MB.

Generated Chinese (``chinese_text``, the earlier benchmarks' text, kept for
the numbers that compare with them): characters drawn from a Zipf-Mandelbrot
distribution over 3,500 characters (weight ``1 / (rank + 3)``), with a full
stop or a comma after 8 to 25 characters.
"""

from __future__ import annotations

import ast
import gettext
import gzip
import random
import re
import sysconfig
from collections.abc import Callable, Iterator
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


def _man_paragraphs(root: Path = MAN_ROOT) -> Iterator[str]:
    for path in sorted(root.glob("man[1-8]/*.gz")):
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


def _kept(sources: Iterator[str], size: int, keep: Callable[[str], bool], joiner: str = " ") -> str:
    """Normalised paragraphs that ``keep`` accepts and that are mostly new, up to ``size``."""
    seen: set[int] = set()
    kept: list[str] = []
    total = 0
    for paragraph in sources:
        text = normalise(paragraph).text
        if not keep(text):
            continue
        hashes = set(_window_hashes(text).tolist())
        if len(hashes & seen) > 0.02 * len(hashes):
            continue
        seen |= hashes
        kept.append(text)
        total += len(text) + len(joiner)
        if total >= size:
            return joiner.join(kept)[:size]
    raise RuntimeError(f"only {total:,} characters of text found, {size:,} wanted")


def _licence_paragraphs() -> Iterator[str]:
    doc = Path("/usr/share/doc")
    paths = [*sorted(Path("/usr/share/common-licenses").iterdir())]
    paths += sorted(doc.glob("*/copyright"))
    # Then the packages' other plain-text documents: READMEs, NEWS, changelogs.
    paths += sorted(p for p in doc.rglob("*") if p.is_file() and p.name != "copyright")
    for path in paths:
        try:
            raw = path.read_bytes()
            source = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
            continue
        for block in re.split(r"\n\s*\n", source):
            # Debian's machine-readable headers ("Files:", "Copyright:") are not prose.
            lines = [ln.strip() for ln in block.splitlines() if not re.match(r"^[A-Z][\w-]*:", ln)]
            text = " ".join(ln for ln in lines if ln and ln != ".")
            if text:
                yield text


@cache
def licence_prose(size: int) -> str:
    """``size`` characters of the machine's licence texts (see the module docstring)."""
    return _kept(_licence_paragraphs(), size, _is_legal_prose)


def _is_legal_prose(text: str) -> bool:
    """Sentences, not the file lists and copyright-holder lists copyright files also hold."""
    if len(text) < 200 or not text.isascii() or text.count("/") > len(text) / 200:
        return False
    return (
        sum(c.isalpha() or c == " " for c in text) >= 0.9 * len(text)
        and repeated_share(text) < 0.05
    )


_CJK_LOCALES = ("zh_CN", "zh_TW", "zh_Hans", "zh_Hant", "zh_HK", "ja")


def _catalogue_messages() -> Iterator[str]:
    for locale in _CJK_LOCALES:
        for path in sorted(Path("/usr/share/locale", locale, "LC_MESSAGES").glob("*.mo")):
            try:
                with path.open("rb") as handle:
                    catalogue = gettext.GNUTranslations(handle)._catalog
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            for key in sorted(catalogue, key=str):
                value = catalogue[key]
                if key and isinstance(value, str):  # the empty key is the catalogue's header
                    yield value


def _cjk_share(text: str) -> float:
    return sum(1 for c in text if "\u3040" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff") / len(
        text
    )


@cache
def cjk_prose(size: int) -> str:
    """``size`` characters of real Chinese and Japanese text (see the module docstring)."""
    manuals = (p for root in ("zh_CN", "zh_TW", "ja") for p in _man_paragraphs(MAN_ROOT / root))
    sources = (p for source in (manuals, _catalogue_messages()) for p in source)
    return _kept(sources, size, lambda t: len(t) >= 8 and _cjk_share(t) >= 1 / 3)


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


def fuzzy_quote(text: str, chars: int) -> str:
    """``chars`` characters of ``text`` from the first word that starts after nine tenths
    of it, with the letter a third of the way in changed: a quote from late in a page
    that only the fuzzy path matches."""
    start = text.index(" ", int(len(text) * 0.9)) + 1
    target = text[start : start + chars]
    middle = chars // 3
    changed = "x" if target[middle] != "x" else "y"
    return target[:middle] + changed + target[middle + 1 :]
