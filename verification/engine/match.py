"""Exact and fuzzy quote matching on normalised text, with a shared work budget.

Offsets are code points into the normalised page text, and ``text[start:end]``
is always the matched span, also when case folding changes lengths (``ß`` folds
to ``ss``, ``İ`` to ``i̇``): matching runs on the folded text and a position
map carries the span back, widened to whole characters; a hit that starts or
ends inside one character's folding is not an exact match.

Exact: every non-overlapping occurrence, left to right, is counted (as
``str.count`` counts); the first is reported.

Fuzzy: the score of a span is ``1 - distance / max(len(quote), len(span))``
with Levenshtein distance. The reported span is the one with the fewest edits
(the longest among equals, since ``max`` grows with it), its ends are the true
alignment ends, and it is accepted when the score reaches the threshold. An
exact hit is reported as ``exact`` with score 1 and costs no work.

How work is counted: a fuzzy search costs ``len(quote) * len(text)`` units,
charged in full before it starts. That is what a plain dynamic-programming
alignment would do, so the unit is simple to predict and a caller knows a
quote is too costly before any work happens. The engine itself is much
cheaper than that:

1. The page is case-folded at C speed (three numpy passes for ASCII, ``bytes.translate``
   or a lookup table of the BMP's folds) into an array of code units.
2. A sampled q-gram filter reads only the grams at multiples of ``g`` (8
   bytes of ASCII read as one integer, straight from the buffer) and marks
   those that occur in the quote: one pass over an eighth of the page.
3. The run of samples richest in quote grams is aligned with edlib first;
   its edit count ``d`` bounds the answer, so the filter need only keep the
   regions where a span within ``d`` edits could lie (each edit touches at
   most one sampled gram, so the bound is lossless), and those are aligned
   exactly. Before all this, one exact search (``bytes.find``) settles an
   exact hit, which no span can beat. The answer equals a full alignment's
   (a property test checks it against edlib over the whole text).

When ``d`` is too large for any gram length to bound anything (an absent
quote at a low threshold), the whole page is aligned in one edlib pass.

edlib takes at most 256 symbols: ASCII and Latin-1 pages go to it as bytes;
other text has its quote characters remapped to bytes (anything not in the
quote is one spare byte). A quote with more than 255 distinct characters is
folded into 255 buckets instead, which turns edlib's distance into a lower
bound: a region whose best spans are truly that close is settled, other
regions are cut into windows aligned exactly in numpy, most promising first,
until none can beat the best found. When that exact work would pass
``MAX_WIDE_ALPHABET_CELLS`` the match raises ``MatchTooCostly`` (and spends
nothing): it happens only near the lowest thresholds, on large pages, without
a close match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache, cached_property
from typing import Literal

import edlib
import numpy as np
from rapidfuzz.distance import Levenshtein

from attest_core.codepoints import codepoints
from attest_core.context import context_window

# One verify/quote call may run a 1,000-character quote over 10 million characters.
FUZZY_WORK_PER_CALL = 1_000 * 10_000_000
# Quotes with more than 255 distinct characters are aligned cell by cell in
# numpy (edlib takes 256 symbols), about 10 ns a cell: cap it near a second.
MAX_WIDE_ALPHABET_CELLS = 100_000_000

Mode = Literal["fuzzy", "exact"]


class MatchTooCostly(Exception):
    """A fuzzy match needs more work than the budget has left."""

    code = "match_too_costly"

    def __init__(
        self, *, needed: int, budget: int, exhausted: bool = False, wide_alphabet: bool = False
    ) -> None:
        self.needed = needed
        self.budget = budget
        # True when the quote alone would fit a full budget: what ran out is
        # the share left by earlier matches of the same batch.
        self.exhausted = exhausted
        # For error details: "budget_exceeded", "budget_used_up" or "wide_alphabet"
        # (then needed and budget count alignment cells, not work units).
        self.reason = "budget_used_up" if exhausted else "budget_exceeded"
        if wide_alphabet:
            self.reason = "wide_alphabet"
        if wide_alphabet:
            message = (
                "This quote has more than 255 distinct characters and too little of the page can "
                "be ruled out at this threshold; raise the threshold or use exact matching."
            )
        elif exhausted:
            message = (
                f"The batch's shared fuzzy-matching budget is used up ({budget:,} of the "
                f"{needed:,} units this quote needs are left); use exact matching."
            )
        else:
            message = (
                f"Fuzzy matching this quote on this page needs {needed:,} work units, more than "
                f"the {budget:,} allowed; use exact matching or a shorter quote."
            )
        super().__init__(message)


@dataclass
class WorkBudget:
    """Fuzzy work units a call or a batch may still spend; shared by reference."""

    units: int
    spent: int = 0

    @property
    def remaining(self) -> int:
        return max(self.units - self.spent, 0)

    def spend(self, needed: int) -> None:
        """Take ``needed`` units or raise ``MatchTooCostly`` without taking any."""
        if needed > self.remaining:
            left = self.remaining
            raise MatchTooCostly(needed=needed, budget=left, exhausted=needed <= self.units)
        self.spent += needed

    def refund(self, units: int) -> None:
        """Give back units taken by ``spend`` for work that was refused, not done."""
        self.spent = max(self.spent - units, 0)


@dataclass(frozen=True)
class MatchResult:
    match: Literal["exact", "fuzzy", "none"]
    score: float | None
    start: int | None
    end: int | None
    context: str | None
    occurrences: int
    work: int


_NO_MATCH = MatchResult("none", None, None, None, None, 0, 0)


def fuzzy_work(text: str, quote: str) -> int:
    """Units a fuzzy search of ``quote`` in ``text`` costs."""
    return len(quote) * len(text)


_GROWS = 0xD800


@cache
def _bmp_folds() -> tuple[np.ndarray, np.ndarray, dict[int, str], bytes]:
    """Case folds of the Basic Multilingual Plane as lookup tables, built once.

    ``single[c]`` is the fold of ``c`` when it is one character (always one of
    the BMP), else the lone surrogate ``_GROWS``; ``grows[c]`` whether ``c``
    folds to several, ``longer`` those folds; ``latin`` the byte table of
    ``single`` for Latin-1 (whose only character folding outside Latin-1 is µ,
    to Greek μ).
    """
    single = np.arange(0x10000, dtype=np.uint16)
    longer: dict[int, str] = {}
    for cp in range(0x80, 0x10000):
        folded = chr(cp).casefold()
        if len(folded) == 1:
            single[cp] = ord(folded)
        else:
            longer[cp] = folded
    single[0x41:0x5B] += 32
    grows = np.zeros(0x10000, dtype=bool)
    grows[list(longer)] = True
    latin = bytes(c if c == 0xB5 else int(single[c]) for c in range(256))
    single[grows] = _GROWS
    return single, grows, longer, latin


@cache
def _fold_blocks(first: int = 1) -> bytes:
    """For each high byte from ``first``: 1 when its block of 256 code points has a fold."""
    single, grows, _, _ = _bmp_folds()
    changes = (single != np.arange(0x10000)) | grows
    return bytes(int(b >= first and changes[b << 8 : (b + 1) << 8].any()) for b in range(256))


# Code points in these ranges (first, end) may fold: every BMP character that
# casefold changes lies in one (a test checks it against the table), and CJK,
# kana and Hangul, and ASCII punctuation and digits before "A", in none.
_FOLD_RANGES = ((0x41, 0x3000), (0xA640, 0xAC00), (0xD800, 0x10000))


def _may_fold(codes: np.ndarray) -> np.ndarray:
    """Characters of a BMP text (uint16) that casefold may change, in a few vector passes."""
    maybe = np.zeros(len(codes), dtype=bool)
    shifted = np.empty_like(codes)
    inside = np.empty(len(codes), dtype=bool)
    for first, end in _FOLD_RANGES:
        np.subtract(codes, np.uint16(first), out=shifted)
        np.less(shifted, np.uint16(end - first), out=inside)
        maybe |= inside
    return maybe


# Built at import, so that no request pays for them.
_fold_blocks(1)

_NOWHERE = np.empty(0, dtype=np.int64)


def _ascii_lower(text: str) -> bytearray:
    """``text.lower()`` of an ASCII text as bytes, in vector passes: faster than ``str.lower``.

    A capital (65 to 90) gains 32; ``c - 65`` wraps below 65, so one unsigned
    comparison finds the capitals. The text is encoded and folded 256 KB at a
    time (the pieces and two scratch arrays stay in cache), and the result is
    written once, into its own buffer.
    """
    block = 1 << 18
    out = bytearray(len(text))
    folded = np.frombuffer(out, dtype=np.uint8)
    scratch = np.empty(min(block, len(text)), dtype=np.uint8)
    capital = np.empty(len(scratch), dtype=bool)
    for at in range(0, len(text), block):
        part = np.frombuffer(text[at : at + block].encode("ascii"), dtype=np.uint8)
        into, shifted, upper = folded[at : at + block], scratch[: len(part)], capital[: len(part)]
        np.subtract(part, np.uint8(65), out=shifted)
        np.less(shifted, np.uint8(26), out=upper)
        np.multiply(upper.view(np.uint8), np.uint8(32), out=into)
        np.bitwise_or(into, part, out=into)
    return out


class _Haystack:
    """The page text prepared for matching: folded when caseless, as code units.

    One pass at C speed per step: ASCII folds in three numpy passes, Latin-1
    with ``bytes.translate``, other text through a lookup table of the BMP's
    folds in numpy; exact search is ``bytes.find`` on the code units. Where
    folding makes a character longer (ß, İ, ŉ, ...), a sparse map leads from
    folded positions back to the original characters.
    """

    def __init__(self, text: str, case_sensitive: bool) -> None:
        self.original = text
        # Folded start, original position and extra length of each growing character.
        self._grow_at = self._grow_from = self._grow_extra = _NOWHERE
        if text.isascii():
            self.data = text.encode("ascii") if case_sensitive else _ascii_lower(text)
            self.codes = np.frombuffer(self.data, dtype=np.uint8)
            self.codes.flags.writeable = False  # as codepoints() gives them
            return
        codes = codepoints(text)
        if not case_sensitive:
            codes = self._fold(codes)
        self.codes = codes

    @cached_property
    def data(self) -> bytes | bytearray:
        """The code units as bytes, for exact search (ASCII pages have them from the start)."""
        return self.codes.tobytes()

    def _fold(self, codes: np.ndarray) -> np.ndarray:
        single, grows, longer, latin = _bmp_folds()
        if codes.dtype == np.uint8 and 0xB5 not in codes:
            folded = np.frombuffer(codes.tobytes().translate(latin), dtype=np.uint8)
            growing = np.flatnonzero(codes == 0xDF)  # ß, the only growing Latin-1 character
        elif codes.dtype == np.uint16:
            # Mostly Latin: ASCII capitals in one vector step; then only the
            # characters that may fold go through the table: Latin-1's µ to ß,
            # and those of the 256-character blocks holding any fold, found by
            # translating the high bytes. Other text (CJK, kana, Hangul): only
            # its few characters in the ranges that hold folds.
            sample = codes[::64]
            if np.count_nonzero(sample < 256) * 4 > len(sample):
                high = codes.view(np.uint8)[1::2].tobytes()
                folded = codes + (((codes - 65) < 26).astype(np.uint16) << 5)
                maybe = np.frombuffer(high.translate(_fold_blocks()), dtype=bool)
                where = np.flatnonzero(maybe | ((codes - 0xB5) < 0x2B))
            else:
                maybe = _may_fold(codes)
                if not maybe.any():
                    return codes  # nothing to fold: pure CJK, kana or Hangul
                folded = codes.copy()
                where = np.flatnonzero(maybe)
            folded[where] = np.take(single, codes[where])
            # Growing characters fold to a lone surrogate in the table: one cheap
            # comparison finds them (and any real lone surrogate, sorted out here).
            growing = where[folded[where] == _GROWS]
            growing = growing[np.take(grows, codes[growing])]
        elif codes.dtype == np.uint8:  # Latin-1 with µ, which folds to Greek μ
            folded = np.take(single, codes)
            growing = np.flatnonzero(codes == 0xDF)
        else:  # beyond the BMP: fold the few distinct wide characters one by one
            folded = codes.copy()
            bmp = codes < 0x10000
            folded[bmp] = np.take(single, codes[bmp])
            wide = np.flatnonzero(~bmp)
            values, inverse = np.unique(codes[wide], return_inverse=True)
            folded[wide] = np.array([ord(chr(v).casefold()) for v in values.tolist()])[inverse]
            growing = np.flatnonzero(folded == _GROWS)
            growing = growing[np.take(grows, codes[growing])]
        if len(growing):
            return self._expand(folded, growing, [longer[c] for c in codes[growing].tolist()])
        return folded

    def _expand(self, codes: np.ndarray, where: np.ndarray, folds: list[str]) -> np.ndarray:
        extra = np.array([len(f) - 1 for f in folds], dtype=np.int64)
        self._grow_from = where
        self._grow_extra = extra
        self._grow_at = where + np.cumsum(extra) - extra
        widest = max(ord(c) for f in folds for c in f)
        dtype = codes.dtype if widest <= np.iinfo(codes.dtype).max else np.uint32
        codes = codes.astype(dtype)  # a writable copy
        codes[where] = [ord(f[0]) for f in folds]
        tails = [ord(c) for f in folds for c in f[1:]]
        return np.insert(codes, np.repeat(where + 1, extra), tails)

    def __len__(self) -> int:
        return len(self.codes)

    def encode(self, folded_quote: str) -> bytes | None:
        """The quote in the haystack's code units; None when it cannot occur in them."""
        codes = codepoints(folded_quote)
        if codes.itemsize > self.codes.itemsize:
            if codes.max() > np.iinfo(self.codes.dtype).max:
                return None
            codes = codes.astype(self.codes.dtype)
        return codes.astype(self.codes.dtype, copy=False).tobytes()

    def find(self, needle: bytes, pos: int) -> int:
        """Code-point position of the next occurrence at or after ``pos``, or -1."""
        w = self.codes.itemsize
        i = self.data.find(needle, pos * w)
        while i != -1 and i % w:
            i = self.data.find(needle, i - i % w + w)
        return -1 if i == -1 else i // w

    def _locate(self, i: int) -> tuple[int, bool]:
        """Original position of the character holding folded position ``i``; is ``i`` inside it."""
        k = int(np.searchsorted(self._grow_at, i, side="right")) - 1
        if k < 0:
            return i, False
        at = int(self._grow_at[k])
        if i <= at + int(self._grow_extra[k]):
            return int(self._grow_from[k]), i > at
        return i - int(self._grow_extra[: k + 1].sum()), False

    @property
    def folding_grows(self) -> bool:
        """Whether folding made some character longer (folded and original offsets differ)."""
        return bool(len(self._grow_at))

    def is_boundary(self, i: int) -> bool:
        return not self.folding_grows or not self._locate(i)[1]

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map a folded span to the original, widened to whole characters."""
        if not len(self._grow_at):
            return start, end
        first = self._locate(start)[0]
        last = self._locate(end - 1)[0] + 1 if end > 0 else 0
        return first, max(first, last)


def _exact(hay: _Haystack, folded_quote: str) -> tuple[int, int, int] | None:
    """First occurrence (start, end) in original offsets and the number of occurrences."""
    needle = hay.encode(folded_quote)
    if needle is None:
        return None
    size = len(folded_quote)
    if hay.codes.itemsize == 1 and not hay.folding_grows:
        first = hay.data.find(needle)
        # Counting from the first hit counts the same non-overlapping hits as from 0.
        return None if first == -1 else (first, first + size, hay.data.count(needle, first))
    found: tuple[int, int] | None = None
    count = 0
    pos = hay.find(needle, 0)
    while pos != -1:
        if hay.is_boundary(pos) and hay.is_boundary(pos + size):
            count += 1
            found = found or hay.to_original(pos, pos + size)
            pos = hay.find(needle, pos + size)
        else:
            pos = hay.find(needle, pos + 1)
    return (*found, count) if found else None


def max_edits(quote_length: int, threshold: float) -> int:
    """Most edits a span can have and still score ``threshold`` against the quote.

    With ``d <= (1 - t) * max(m, L)`` and ``L <= m + d`` it follows that
    ``d <= (1 - t) * m / t``; spans are then at most ``m + d`` long.
    """
    return min(quote_length, math.floor((1 - threshold) * quote_length / threshold + 1e-9))


# Gram sizes and sampling steps (in code units) by code unit width, tried in
# order: a gram is 2, 4 or 8 bytes, read straight from the text's buffer as one
# unsigned integer. Two-byte text (CJK) first samples its 4-character grams at
# every eighth position, which reads as many grams a megabyte as ASCII does.
_GRAMS = {1: ((8, 8), (4, 4), (2, 2)), 2: ((4, 8), (4, 4), (2, 2)), 4: ((2, 2), (1, 1))}
_HASH_BITS = 16
_MIX: dict[int, np.unsignedinteger] = {4: np.uint32(0x9E3779B1), 8: np.uint64(0x9E3779B97F4A7C15)}
# A filter that leaves more of the page than this is not worth its alignment:
# a smaller gram is tried, then the whole page is aligned.
_MOST_COVERED = 0.25
# Regions longer than this many spans are aligned in one distance pass first.
_LONG_REGION = 4
# Places first aligned to bound the edits.
_GUESSES = 3
# Sampled grams hashed at a time by the filter.
_HASH_BLOCK = 1 << 16


def _slots(grams: np.ndarray) -> np.ndarray:
    """A slot in a 2**16 table for each gram: the gram itself when 2 bytes, else a hash."""
    if grams.itemsize == 2:
        return grams
    mix = _MIX[grams.itemsize]
    slots: np.ndarray = (grams * mix) >> mix.dtype.type(8 * grams.itemsize - _HASH_BITS)
    return slots


class _GramFilter:
    """q-gram hits on a sample of the text: the ``g``-grams at multiples of ``step``.

    ``step`` is a multiple of ``g``, so the sampled grams do not overlap.
    Sampled lemma: a span of ``L`` characters holds at least
    ``(L - g + 1) // step`` sampled grams, and each edit of an alignment with
    the quote touches at most one of them (they do not overlap), so a span
    within ``d`` edits of the quote (``L >= m - d``) holds at least
    ``(m - d - g + 1) // step - d`` sampled grams that occur in the quote. Its
    grams lie among ``(m + d - g) // step + 1`` consecutive samples, so a run of
    samples that holds fewer quote grams than that holds no such span's grams.
    Reading every step-th gram makes this pass ``step`` times cheaper than the
    classic filter, and the gram is read from the text's own bytes.
    """

    def __init__(self, t_codes: np.ndarray, q_codes: np.ndarray, g: int, step: int) -> None:
        self.g, self.step = g, step
        self.n = len(t_codes)
        width = t_codes.itemsize
        samples = self.n // step
        grams = t_codes[: samples * step].view(np.dtype(f"<u{g * width}"))[:: step // g]
        table = np.zeros(1 << (16 if g * width == 2 else _HASH_BITS), dtype=np.uint8)
        table[_slots(_quote_grams(q_codes, g, width))] = 1
        # Sample indexes whose gram occurs in the quote: few on real text, so
        # everything after this works on them, not on the whole page. Hashed a block
        # at a time: the hashes of a whole page's samples took 2 x 8 bytes per sample
        # at once (28 MB on a 14 MB page).
        found = np.empty(len(grams), dtype=np.uint8)
        for at in range(0, len(grams), _HASH_BLOCK):
            block = slice(at, at + _HASH_BLOCK)
            np.take(table, _slots(grams[block]), out=found[block])
        self.hits = np.flatnonzero(found)

    def _run(self, m: int, d: int) -> int:
        """Samples that can lie inside one span of at most ``m + d`` characters."""
        return (m + d - self.g) // self.step + 1

    def best_windows(self, m: int, d: int, count: int) -> list[tuple[int, int]]:
        """The text around the (at most ``count``, apart) runs of samples richest in quote grams."""
        hits, g = self.hits, self.step
        if not len(hits):
            return [(0, min(m + d, self.n))]
        held = np.searchsorted(hits, hits + self._run(m, d)) - np.arange(len(hits))
        chosen: list[int] = []
        for i in np.argsort(-held, kind="stable")[: 16 * count].tolist():
            j = int(hits[i])
            if all(abs(j - other) * g > m + d for other in chosen):
                chosen.append(j)
                if len(chosen) == count:
                    break
        # Edits may have destroyed the first grams of the span: reach a span back.
        span = m + d
        return [(max(j * g - span, 0), min(j * g + 2 * span, self.n)) for j in chosen]

    def regions(self, m: int, d: int) -> list[tuple[int, int]] | None:
        """Merged text regions that may hold a span within ``d`` edits; None if no bound."""
        g, hits = self.step, self.hits
        need = _needed_hits(m, d, self.g, g)
        if need < 1:
            return None
        if len(hits) < need:
            return []
        run = self._run(m, d)
        # Runs of samples [j, j + run) holding hits i .. i + need - 1: those with
        # hits[i + need - 1] - run < j <= hits[i].
        first, last = hits[: len(hits) - need + 1], hits[need - 1 :]
        dense = np.flatnonzero(last - first < run)
        if not len(dense):
            return []
        # A span whose first sample is j starts in ((j - 1) step, j step].
        starts = np.maximum((last[dense] - run) * g + 1, 0)
        ends = np.minimum(first[dense] * g + m + d, self.n)
        breaks = np.flatnonzero(starts[1:] > ends[:-1])
        starts = starts[np.concatenate(([0], breaks + 1))]
        ends = ends[np.concatenate((breaks, [len(ends) - 1]))]
        return list(zip(starts.tolist(), ends.tolist(), strict=True))


# A filter is built over the whole page only if, on its first stretch, it keeps
# less than this share: else it would cost a pass and leave the page to align.
_PROBE_CHARS = 1 << 16
_PROBE_KEPT = 0.9


def _may_narrow(t_codes: np.ndarray, aligner: _Aligner, g: int, step: int, d: int) -> bool:
    """Whether the (g, step) filter keeps less than ``_PROBE_KEPT`` of the page's first stretch.

    Only work depends on this: skipping a filter leaves more text to align, never
    less, so the answer is the same either way.
    """
    probe = min(len(t_codes) // 8, _PROBE_CHARS)
    if probe < 4 * (aligner.m + d):
        return True
    kept = _GramFilter(t_codes[:probe], aligner.q_codes, g, step).regions(aligner.m, d)
    return kept is None or sum(hi - lo for lo, hi in kept) < _PROBE_KEPT * probe


def _most_bounded_edits(m: int, k: int, sizes: list[tuple[int, int]]) -> int:
    """The most edits (at most ``k``) at which some filter of ``sizes`` can bound anything."""
    lo, hi = -1, k  # _needed_hits falls as the edits grow
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if any(_needed_hits(m, mid, g, step) >= 1 for g, step in sizes):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _needed_hits(m: int, d: int, g: int, step: int) -> int:
    """Sampled quote grams every span within ``d`` edits of an ``m``-character quote holds."""
    return (m - d - g + 1) // step - d


def _quote_grams(q_codes: np.ndarray, g: int, width: int) -> np.ndarray:
    """Every g-gram of the quote as the integer the text's bytes would read as."""
    count = len(q_codes) - g + 1
    if count <= 0:
        return np.empty(0, dtype=np.dtype(f"<u{g * width}"))
    bits = 8 * width
    fits = np.ones(count, dtype=bool)
    value = np.zeros(count, dtype=np.uint64)
    for j in range(g):
        part = q_codes[j : j + count].astype(np.uint64)
        fits &= part < (1 << bits)  # a wider character never occurs in the text
        value |= part << np.uint64(bits * j)
    return value[fits].astype(np.dtype(f"<u{g * width}"))


class _Aligner:
    """Semi-global alignment of the quote against text regions, returning true distances.

    edlib takes at most 256 symbols. Text stored as bytes goes to it as is
    when the quote fits in bytes (edlib maps the symbols). Otherwise quote
    characters become byte indexes and anything else one spare byte; a quote
    with more than 255 distinct characters is folded into 255 buckets, which
    makes edlib's distance a lower bound, checked per reported span with an
    exact distance and, where that falls short, by an exact numpy alignment.
    """

    def __init__(self, t_codes: np.ndarray, quote: str) -> None:
        self.t_codes = t_codes
        self.quote = quote
        q_codes = codepoints(quote)
        self.q_codes = q_codes
        self.m = len(quote)
        self.bucketed = False
        self._lut: np.ndarray | None = None
        if t_codes.itemsize == 1 and q_codes.itemsize == 1:
            self.q_bytes = q_codes.tobytes()
            return
        alphabet = np.unique(q_codes)
        self.bucketed = len(alphabet) > 255
        index = np.arange(len(alphabet)) % 255
        self.q_bytes = index[np.searchsorted(alphabet, q_codes)].astype(np.uint8).tobytes()
        if t_codes.dtype != np.uint32:
            self._lut = np.full(1 << (8 * t_codes.itemsize), 255, dtype=np.uint8)
            self._lut[alphabet[alphabet < len(self._lut)]] = index[alphabet < len(self._lut)]
        else:
            self._alphabet, self._index = alphabet, index

    def _text_bytes(self, lo: int, hi: int) -> bytes:
        codes = self.t_codes[lo:hi]
        if self.t_codes.itemsize == 1 and self._lut is None:
            return codes.tobytes()
        if self._lut is not None:
            return np.take(self._lut, codes).tobytes()
        idx = np.minimum(np.searchsorted(self._alphabet, codes), len(self._alphabet) - 1)
        known = self._alphabet[idx] == codes
        return np.where(known, self._index[idx], 255).astype(np.uint8).tobytes()

    def _span_text(self, lo: int, hi: int) -> str:
        codes = self.t_codes[lo:hi]
        if codes.itemsize == 1:
            return codes.tobytes().decode("latin-1")
        return codes.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")

    def best(self, regions: list[tuple[int, int]], k: int) -> tuple[int, int, int] | None:
        """Fewest edits (at most ``k``), then the longest, then the first span: (d, start, end)."""
        if self.bucketed:
            return self._best_bucketed(regions, k)
        best: tuple[int, int, int] | None = None
        for lo, hi in regions:
            for d, start, end in self._align(lo, hi, k):
                if best is None or _better((d, start, end), best):
                    best = (d, start, end)
        return best

    def upper_bound(
        self, window: tuple[int, int], k: int
    ) -> tuple[tuple[int, int, int] | None, bool]:
        """A span of ``window`` within ``k`` edits, and whether it is the window's best.

        Its distance bounds the answer. With buckets it is the best of edlib's
        spans by true distance, settled only when that equals edlib's bound.
        """
        if not self.bucketed:
            found = self.best([window], k)
            return found, found is not None
        spans = self._align(*window, k)
        if not spans:
            return None, False
        best = min(self._true(spans), key=_preference)
        return (best if best[0] <= k else None), best[0] == spans[0][0]

    def _true(self, spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """The spans with their true distance to the quote."""
        return [
            (Levenshtein.distance(self.quote, self._span_text(a, b)), a, b) for _, a, b in spans
        ]

    def _align(self, lo: int, hi: int, k: int) -> list[tuple[int, int, int]]:
        """edlib's fewest-edit spans of ``text[lo:hi]`` (its distance: a bound when bucketed)."""
        if hi <= lo:
            return []
        target = self._text_bytes(lo, hi)
        longest = self.m + k
        if hi - lo > _LONG_REGION * longest:
            # One pass finds the distance and the ends; each start then comes from
            # the short stretch before its end, not from a second pass over it all.
            found = edlib.align(self.q_bytes, target, mode="HW", task="distance", k=k)
            if found["editDistance"] < 0:
                return []
            # Spans at the best distance are at most that much longer than the quote.
            k = found["editDistance"]
            longest = self.m + k
            # Ends whose stretches overlap are located in one call: every span ending at
            # one of them starts in its own stretch, so the union adds no start.
            spans: set[tuple[int, int, int]] = set()
            stretches: list[list[int]] = []
            for last in sorted(last for _, last in found["locations"]):
                start = max(last + 1 - longest, 0)
                if stretches and start <= stretches[-1][1]:
                    stretches[-1][1] = last + 1
                else:
                    stretches.append([start, last + 1])
            for start, stop in stretches:
                spans.update(self._locate(target[start:stop], lo + start, k))
            return sorted(spans)
        return self._locate(target, lo, k)

    def _locate(self, target: bytes, offset: int, k: int) -> list[tuple[int, int, int]]:
        found = edlib.align(self.q_bytes, target, mode="HW", task="locations", k=k)
        d = found["editDistance"]
        if d < 0:
            return []
        # An empty alignment (start None) matches nothing worth reporting.
        return [
            (d, offset + start, offset + last + 1)
            for start, last in found["locations"]
            if start is not None and last >= start
        ]

    # complexity: the fuzzy matcher's inner loop over candidate regions; split, each part
    # would pass the aligner's running bests back and forth on every region.
    def _best_bucketed(self, regions: list[tuple[int, int]], k: int) -> tuple[int, int, int] | None:
        """Regions by their bucketed bound, best first; each checked exactly, until none can win.

        A region whose best spans by edlib are truly that close is settled (no
        span of it can be closer than the bound). Another long region is cut
        into windows of twice the longest span, stepped by that length (every
        span lies inside one), so that exact alignment stays local.
        """
        span = self.m + k
        pieces = []
        for lo, hi in regions:
            spans = self._align(lo, hi, k)
            if not spans:
                continue
            if hi - lo <= 2 * span or min(self._true(spans))[0] == spans[0][0]:
                pieces.append((spans[0][0], lo, hi, spans))
                continue
            for w_lo in range(lo, max(hi - span, lo + 1), span):
                w_hi = min(w_lo + 2 * span, hi)
                inner = self._align(w_lo, w_hi, k)
                if inner:
                    pieces.append((inner[0][0], w_lo, w_hi, inner))
        best: tuple[int, int, int] | None = None
        checked = sorted(
            (bound, lo, hi, min(self._true(spans), key=_preference))
            for bound, lo, hi, spans in pieces
        )
        # Settled pieces (true distance equal to the bound) answer at once; the
        # others need exact alignment wherever their bound may still win. When
        # that could pass the cap, refuse now rather than after most of it.
        settled = [true for bound, _, _, true in checked if true[0] == bound]
        limit = min(settled, key=_preference)[0] if settled else k
        doubtful = [
            (lo, hi) for bound, lo, hi, true in checked if true[0] > bound and bound <= limit
        ]
        if self.m * sum(hi - lo for lo, hi in doubtful) > MAX_WIDE_ALPHABET_CELLS:
            raise MatchTooCostly(
                needed=self.m * sum(hi - lo for lo, hi in doubtful),
                budget=MAX_WIDE_ALPHABET_CELLS,
                wide_alphabet=True,
            )
        for bound, lo, hi, (d, start, end) in checked:
            if best is not None and bound > best[0]:
                break
            if d > bound:
                # edlib saw only the spans at the bucketed optimum; another span of
                # this piece may be truly closer: align it exactly in numpy.
                exact = _align_any_alphabet(self.q_codes, self.t_codes[lo:hi], k)
                if exact is None:
                    continue
                d, start, end = exact[0], lo + exact[1], lo + exact[2]
            if best is None or _better((d, start, end), best):
                best = (d, start, end)
        return best


def _preference(span: tuple[int, int, int]) -> tuple[int, int, int]:
    """Order of spans (d, start, end): fewer edits, then longer, then earlier."""
    d, start, end = span
    return d, start - end, start


def _better(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return _preference(a) < _preference(b)


def _align_any_alphabet(
    q_codes: np.ndarray, t_codes: np.ndarray, k: int
) -> tuple[int, int, int] | None:
    """Semi-global Levenshtein in numpy, row by row; for quotes with > 255 distinct characters.

    ``cost[j]`` is the fewest edits of the quote prefix ending at text position
    ``j``; ``origin[j]`` the start of that alignment (the earliest among ties).
    """
    width = len(t_codes) + 1
    idx = np.arange(width, dtype=np.int64)
    cost = np.zeros(width, dtype=np.int64)
    origin = idx.copy()
    for ch in q_codes:
        diag = cost[:-1] + (t_codes != ch)
        up = cost + 1
        step = up.copy()
        step_origin = origin.copy()
        better = diag <= up[1:]
        step[1:] = np.where(better, diag, up[1:])
        step_origin[1:] = np.where(better, origin[:-1], origin[1:])
        key = step - idx
        best = np.minimum.accumulate(key)
        holder = np.maximum.accumulate(np.where(key == best, idx, 0))
        cost = best + idx
        origin = step_origin[holder]
    distance = int(cost.min())
    if distance > k:
        return None
    ends = np.flatnonzero(cost == distance)
    lengths = ends - origin[ends]
    pick = int(np.argmax(lengths))
    return distance, int(origin[ends[pick]]), int(ends[pick])


# complexity: the fuzzy matcher's inner search (candidate windows, bucketed alignment,
# the budget checks between them), kept in one piece so its hot loop makes no extra calls.
def best_fuzzy_span(
    t_codes: np.ndarray, quote: str, threshold: float
) -> tuple[int, int, int] | None:
    """The fewest-edit span of the text (as code units), the longest and first among equals.

    Returns ``(edits, start, end)``, or None when no span is within the edits
    ``threshold`` allows. First the run of samples richest in quote grams is
    aligned: its distance ``d`` (or the threshold's limit) bounds the answer,
    so the lossless filter only has to keep the regions that may hold a span
    within ``d`` edits, which on real text is the one region already seen.
    """
    m, n = len(quote), len(t_codes)
    k = max_edits(m, threshold)
    aligner = _Aligner(t_codes, quote)
    sizes = [(g, step) for g, step in _GRAMS[t_codes.itemsize] if m >= 2 * step]
    if n <= _LONG_REGION * (m + k) or not sizes:
        return aligner.best([(0, n)], k)
    first = _GramFilter(t_codes, aligner.q_codes, *sizes[0])
    # A few of the richest places, apart: one repeated phrase elsewhere on a
    # large page must not hide the quote's own place.
    guesses = first.best_windows(m, k, _GUESSES)
    found: tuple[int, int, int] | None = None
    settled = True
    # A place's span helps only when a filter can bound its edits (past that the whole
    # page is aligned anyway): each place is aligned to that limit, and one holding no
    # span within it is settled only when the best found is within it too. When the
    # richest holds none, the next places are aligned only if they are a small part of
    # the page (else they cost more than a whole-page pass is likely to save: an absent
    # quote at a low threshold).
    limit = k if aligner.bucketed else min(k, _most_bounded_edits(m, k, sizes))
    if limit < 0:
        guesses, settled = [], False
    for number, guess in enumerate(guesses):
        if number == 1 and found is None and len(guesses) * (guess[1] - guess[0]) * 16 > n:
            settled = False
            break
        span, exact = aligner.upper_bound(guess, limit)
        if span is None and not aligner.bucketed and found is not None and found[0] <= limit:
            exact = True  # aligned exactly: it holds no span within the best found
        settled = settled and exact
        if span is not None and (found is None or _better(span, found)):
            found = span
        if number == 0 and found is not None and settled:
            # The first place settles it when the first filter puts every span within
            # its distance inside it: the other places cannot hold a closer one.
            kept = first.regions(m, found[0])
            if kept is not None and all(guess[0] <= lo and hi <= guess[1] for lo, hi in kept):
                return found
    d = k if found is None else found[0]
    regions, covered = [(0, n)], n
    for g, step in sizes:
        if _needed_hits(m, d, g, step) < 1:
            continue  # too many edits allowed for grams this long to bound anything
        if (g, step) != (first.g, first.step) and not _may_narrow(t_codes, aligner, g, step, d):
            continue  # on a sample of the page this filter kept nearly everything
        gram_filter = (
            first
            if (g, step) == (first.g, first.step)
            else _GramFilter(t_codes, aligner.q_codes, g, step)
        )
        kept = gram_filter.regions(m, d)
        if kept is not None and sum(hi - lo for lo, hi in kept) < covered:
            regions, covered = kept, sum(hi - lo for lo, hi in kept)
            if covered <= _MOST_COVERED * n:
                break
    inside = all(any(a <= lo and hi <= b for a, b in guesses) for lo, hi in regions)
    if settled and inside:
        return found  # every span within d edits lies in the text already aligned
    return aligner.best(regions, d)


def _similarity(quote: str, span: str) -> float:
    return 1 - Levenshtein.distance(quote, span) / max(len(quote), len(span))


def match_quote(
    text: str,
    quote: str,
    *,
    mode: Mode = "fuzzy",
    case_sensitive: bool = False,
    threshold: float = 0.9,
    budget: WorkBudget | None = None,
) -> MatchResult:
    """Find ``quote`` in ``text`` (both already normalised)."""
    if not quote:
        raise ValueError("quote is empty")
    if mode not in ("fuzzy", "exact"):
        raise ValueError(f"unknown match mode {mode!r}")
    if not 0 < threshold <= 1:
        raise ValueError("threshold must be in (0, 1]")
    needle = quote if case_sensitive else quote.casefold()
    if (mode == "exact" or threshold >= 1) and text.isascii():
        # ASCII folds in place (one character to one): search the folded bytes, whose
        # offsets are the text's; a needle that is not ASCII cannot occur in them.
        if not needle.isascii():
            return _NO_MATCH
        folded = text.encode("ascii") if case_sensitive else _ascii_lower(text)
        return _ascii_exact(text, folded, needle)
    hay = _Haystack(text, case_sensitive)
    # An exact hit is the fuzzy answer too (no span has fewer edits) and costs
    # no work, whatever the budget: one search at C speed settles it first.
    exact = _exact_result(text, hay, needle)
    if exact is not None or mode == "exact" or threshold >= 1:
        return exact or _NO_MATCH
    needed = fuzzy_work(text, quote)
    budget = budget if budget is not None else WorkBudget(FUZZY_WORK_PER_CALL)
    budget.spend(needed)
    try:
        found = best_fuzzy_span(hay.codes, needle, threshold)
    except MatchTooCostly:
        budget.refund(needed)  # refused, so not spent
        raise
    if found is None:
        # The filter is lossless: no span within the threshold's edits.
        return replace(_NO_MATCH, work=needed)
    edits, start, end = found
    if hay.folding_grows:
        # Folding made some characters longer: the span is widened to whole
        # characters (a span without edits may lie on part of one, as no exact
        # hit exists) and scored again on them.
        start, end = hay.to_original(start, end)
        matched = text[start:end]
        score = _similarity(needle, matched if case_sensitive else matched.casefold())
    else:
        # The span's code units are its folded characters, one for one: the
        # alignment's edit count is its distance to the quote.
        score = 1 - edits / max(len(needle), end - start)
    if score < threshold:
        return replace(_NO_MATCH, work=needed)
    return MatchResult(
        "fuzzy", round(score, 3), start, end, context_window(text, start, end), 1, needed
    )


def _ascii_exact(text: str, folded: bytes | bytearray, needle: str) -> MatchResult:
    wanted = needle.encode("ascii")
    first = folded.find(wanted)
    if first == -1:
        return _NO_MATCH
    end = first + len(wanted)
    # Counting from the first hit counts the same non-overlapping hits as from 0.
    count = folded.count(wanted, first)
    return MatchResult("exact", 1.0, first, end, context_window(text, first, end), count, 0)


def _exact_result(text: str, hay: _Haystack, needle: str) -> MatchResult | None:
    exact = _exact(hay, needle)
    if exact is None:
        return None
    start, end, count = exact
    return MatchResult("exact", 1.0, start, end, context_window(text, start, end), count, 0)
