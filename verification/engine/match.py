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
cheaper than that: a q-gram count in numpy over the whole text (linear, a few
vector operations per character) discards every window that cannot reach the
threshold, and only the few that remain are aligned exactly with edlib. The
filter is lossless (the q-gram lemma), so the answer equals a full alignment's.

edlib takes at most 256 symbols, so quote characters are remapped to bytes
(anything not in the quote is one spare byte). A quote with more than 255
distinct characters is folded into 255 buckets instead, which turns edlib's
answer into a lower bound per window; windows whose bound still allows the
threshold are aligned exactly in numpy, most promising first, until none can
beat the best found. When that exact work would pass
``MAX_WIDE_ALPHABET_CELLS`` the match raises ``MatchTooCostly`` (and spends
nothing): it happens only near the lowest thresholds, on large pages, without
a close match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import edlib
import numpy as np
from rapidfuzz.distance import Levenshtein

# One verify/quote call may run a 1,000-character quote over 10 million characters.
FUZZY_WORK_PER_CALL = 1_000 * 10_000_000
# Quotes with more than 255 distinct characters are aligned cell by cell in
# numpy (edlib takes 256 symbols), about 10 ns a cell: cap it near a second.
MAX_WIDE_ALPHABET_CELLS = 100_000_000
CONTEXT_CHARS = 80

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


@dataclass(frozen=True)
class MatchResult:
    match: Literal["exact", "fuzzy", "none"]
    score: float | None
    start: int | None
    end: int | None
    context: str | None
    occurrences: int
    work: int


def fuzzy_work(text: str, quote: str) -> int:
    """Units a fuzzy search of ``quote`` in ``text`` costs."""
    return len(quote) * len(text)


def context_window(text: str, start: int, end: int, width: int = CONTEXT_CHARS) -> str:
    """``text[start:end]`` with about ``width`` characters each side, cut at word boundaries."""
    left = max(start - width, 0)
    if left > 0:
        space = text.find(" ", left - 1, start)
        left = space + 1 if space != -1 else left
    right = min(end + width, len(text))
    if right < len(text):
        space = text.rfind(" ", end, right + 1)
        right = space if space != -1 else right
    window = text[left:right].strip(" ")
    return f"{'...' if left > 0 else ''}{window}{'...' if right < len(text) else ''}"


def _codes(s: str) -> np.ndarray:
    """Code points of ``s`` in the narrowest unsigned type that holds them all."""
    try:
        return np.frombuffer(s.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        pass
    # surrogatepass: a lone surrogate (possible in a str from JSON) is one code point.
    wide = np.frombuffer(s.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    if len(wide) == len(s):  # nothing beyond the BMP
        return wide
    return np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


class _Haystack:
    """The page text prepared for matching: folded when caseless, as code points.

    Folding and searching numpy code points and their bytes is several times
    faster than ``str``: ASCII letters fold in one vector operation, each
    distinct other character is folded once with ``str.casefold``, and exact
    search is ``bytes.find`` on the code units. Where folding makes a
    character longer (ß, İ, ŉ, ...), a sparse map leads from folded
    positions back to the original characters.
    """

    def __init__(self, text: str, case_sensitive: bool) -> None:
        self.original = text
        codes = _codes(text)
        # Folded start, original position and extra length of each growing character.
        self._grow_at = self._grow_from = self._grow_extra = np.empty(0, dtype=np.int64)
        if not case_sensitive:
            codes = codes.copy()
            codes[(codes >= 65) & (codes <= 90)] += 32
            high = np.flatnonzero(codes >= 128)
            values, inverse = np.unique(codes[high], return_inverse=True)
            folds = [chr(v).casefold() for v in values.tolist()]
            # A growing character keeps its code here; _expand replaces it below.
            single = [
                ord(f) if len(f) == 1 else v for f, v in zip(folds, values.tolist(), strict=True)
            ]
            if max(single, default=0) > np.iinfo(codes.dtype).max:
                codes = codes.astype(np.uint32)
            codes[high] = np.array(single, dtype=codes.dtype)[inverse]
            growing = {v: f for f, v in zip(folds, values.tolist(), strict=True) if len(f) > 1}
            if growing:
                codes = self._expand(codes, growing)
        self.codes = codes
        self.data = codes.tobytes()

    def _expand(self, codes: np.ndarray, growing: dict[int, str]) -> np.ndarray:
        where = np.flatnonzero(np.isin(codes, list(growing)))
        folds = [growing[v] for v in codes[where].tolist()]
        extra = np.array([len(f) - 1 for f in folds], dtype=np.int64)
        self._grow_from = where
        self._grow_extra = extra
        self._grow_at = where + np.cumsum(extra) - extra
        widest = max(ord(c) for f in folds for c in f)
        if widest > np.iinfo(codes.dtype).max:
            codes = codes.astype(np.uint32)
        codes[where] = [ord(f[0]) for f in folds]
        tails = [ord(c) for f in folds for c in f[1:]]
        return np.insert(codes, np.repeat(where + 1, extra), tails)

    def __len__(self) -> int:
        return len(self.codes)

    def encode(self, folded_quote: str) -> bytes | None:
        """The quote in the haystack's code units; None when it cannot occur in them."""
        codes = _codes(folded_quote).astype(np.uint32)
        if codes.max(initial=0) > np.iinfo(self.codes.dtype).max:
            return None
        return codes.astype(self.codes.dtype).tobytes()

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

    def is_boundary(self, i: int) -> bool:
        return not len(self._grow_at) or not self._locate(i)[1]

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
    if hay.codes.itemsize == 1 and not len(hay._grow_at):
        first = hay.data.find(needle)
        return None if first == -1 else (first, first + size, hay.data.count(needle))
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


# A small table stays in cache; its false hits only let a few more windows through.
_HASH_BITS = 16
_BLOCK = 1 << 18
_GOLDEN = np.uint32(2654435761)


def _gram_slots(codes: np.ndarray, g: int) -> np.ndarray:
    """A slot in a 2**_HASH_BITS table for every g-gram (position) of ``codes``."""
    count = len(codes) - g + 1
    h = codes[:count].astype(np.uint32)
    for j in range(1, g):
        h *= np.uint32(1_000_003)
        h += codes[j : j + count]
    h *= _GOLDEN
    h >>= np.uint32(32 - _HASH_BITS)
    return h


def _choose_gram(m: int, k: int) -> tuple[int, int] | None:
    """The longest gram that still leaves a useful q-gram lemma bound, and that bound."""
    for g in range(8, 0, -1):
        need = (m - g + 1) - k * g
        if need >= max(4, m // 4):
            return g, need
    return None


def _candidate_regions(t_codes: np.ndarray, q_codes: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Regions of the text that may hold a span within ``k`` edits of the quote.

    q-gram lemma: such a span keeps at least ``m - g + 1 - k*g`` of the quote's
    g-grams, all starting inside the span's first ``m + k - g + 1`` positions,
    so a window holding fewer grams that occur in the quote holds no match.
    """
    n, m = len(t_codes), len(q_codes)
    longest = m + k
    choice = _choose_gram(m, k) if n > 2 * longest else None
    if choice is None:
        return [(0, n)] if n else []
    g, need = choice
    table = np.zeros(1 << _HASH_BITS, dtype=np.uint8)
    table[_gram_slots(q_codes, g)] = 1
    window = longest - g + 1  # gram starts inside the longest span
    grams = n - g + 1
    found: list[np.ndarray] = []
    # Blocks that stay in cache, each with a window's overlap. Counts are
    # differences of a running sum, exact in unsigned arithmetic as long as a
    # window holds fewer grams than the type counts, though the sum wraps.
    count_type = np.uint16 if window < 2**16 else np.uint32
    for lo in range(0, grams, _BLOCK):
        hi = min(lo + _BLOCK, grams)
        reach = min(hi + window - 1, grams)
        hits = np.take(table, _gram_slots(t_codes[lo : reach + g - 1], g))
        totals = np.zeros(len(hits) + 1, dtype=count_type)
        np.cumsum(hits, dtype=count_type, out=totals[1:])
        counts = np.empty(hi - lo, dtype=count_type)
        full = max(min(hi - lo, len(hits) - window + 1), 0)  # starts whose window fits
        np.subtract(totals[window : window + full], totals[:full], out=counts[:full])
        counts[full:] = totals[-1] - totals[full : hi - lo]
        found.append(np.flatnonzero(counts >= need) + lo)
    starts = np.concatenate(found)
    if not len(starts):
        return []
    breaks = np.flatnonzero(np.diff(starts) > longest)
    region_starts = starts[np.concatenate(([0], breaks + 1))]
    region_ends = starts[np.concatenate((breaks, [len(starts) - 1]))] + longest
    return [(int(a), min(int(b), n)) for a, b in zip(region_starts, region_ends, strict=True)]


def _to_bytes(codes: np.ndarray, alphabet: np.ndarray) -> bytes:
    """Code points as bytes: quote characters by index, anything else one spare byte."""
    idx = np.searchsorted(alphabet, codes)
    idx[idx == len(alphabet)] = 0
    known = alphabet[idx] == codes
    return np.where(known, idx, len(alphabet)).astype(np.uint8).tobytes()


def _align_small_alphabet(q_bytes: bytes, t_bytes: bytes, k: int) -> tuple[int, int, int] | None:
    found = edlib.align(q_bytes, t_bytes, mode="HW", task="locations", k=k)
    if found["editDistance"] < 0:
        return None
    start, last = max(found["locations"], key=lambda loc: (loc[1] - loc[0], -loc[0]))
    return found["editDistance"], start, last + 1


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


def _large_alphabet_windows(
    q_codes: np.ndarray, t_codes: np.ndarray, regions: list[tuple[int, int]], k: int
) -> list[tuple[int, int, int]]:
    """Windows of the regions with a lower bound on their best distance, most promising first.

    edlib takes at most 256 symbols, so the quote's characters are folded into
    255 buckets: characters sharing a bucket compare equal, which can only
    lower a distance. Every span of at most ``m + k`` characters lies inside
    one window of twice that length.
    """
    alphabet = np.unique(q_codes)
    buckets = np.arange(len(alphabet)) % 255
    idx = np.minimum(np.searchsorted(alphabet, t_codes), len(alphabet) - 1)
    hashed = np.where(alphabet[idx] == t_codes, buckets[idx], 255).astype(np.uint8).tobytes()
    q_hashed = buckets[np.searchsorted(alphabet, q_codes)].astype(np.uint8).tobytes()
    span = len(q_codes) + k
    windows: list[tuple[int, int, int]] = []
    for lo, hi in regions:
        for w_lo in range(lo, max(hi - span, lo + 1), span):
            w_hi = min(w_lo + 2 * span, hi)
            found = edlib.align(q_hashed, hashed[w_lo:w_hi], mode="HW", task="distance", k=k)
            if found["editDistance"] >= 0:
                windows.append((found["editDistance"], w_lo, w_hi))
    return sorted(windows)


def best_fuzzy_span(t_codes: np.ndarray, quote: str, threshold: float) -> tuple[int, int] | None:
    """The best-scoring span of the text (as code points) among fewest-edit alignments.

    None when no span is within the edits ``threshold`` allows.
    """
    m = len(quote)
    k = max_edits(m, threshold)
    q_codes = _codes(quote)
    alphabet = np.unique(q_codes)
    regions = _candidate_regions(t_codes, q_codes, k)
    best: tuple[float, int, int] | None = None

    def consider(found: tuple[int, int, int] | None, offset: int) -> None:
        nonlocal best
        if found is not None:
            distance, start, end = found
            score = 1 - distance / max(m, end - start)
            if best is None or score > best[0]:
                best = (score, offset + start, offset + end)

    if len(alphabet) < 256:
        q_bytes = _to_bytes(q_codes, alphabet)
        for lo, hi in regions:
            consider(_align_small_alphabet(q_bytes, _to_bytes(t_codes[lo:hi], alphabet), k), lo)
    else:
        # Exact alignment (numpy) only where the bucketed lower bound leaves
        # hope: with d edits no span scores above 1 - d / (m + d).
        hopeful = [
            (bound, lo, hi)
            for bound, lo, hi in _large_alphabet_windows(q_codes, t_codes, regions, k)
            if 1 - bound / (m + bound) >= threshold
        ]
        cells = 0
        for bound, lo, hi in hopeful:
            if best is not None and 1 - bound / (m + bound) < best[0]:
                break
            cells += m * (hi - lo)
            if cells > MAX_WIDE_ALPHABET_CELLS:
                needed = m * sum(hi - lo for _, lo, hi in hopeful)
                raise MatchTooCostly(
                    needed=needed, budget=MAX_WIDE_ALPHABET_CELLS, wide_alphabet=True
                )
            consider(_align_any_alphabet(q_codes, t_codes[lo:hi], k), lo)
    return None if best is None else (best[1], best[2])


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
    hay = _Haystack(text, case_sensitive)
    needle = quote if case_sensitive else quote.casefold()
    exact = _exact(hay, needle)
    if exact is not None:
        start, end, count = exact
        return MatchResult("exact", 1.0, start, end, context_window(text, start, end), count, 0)
    if mode == "exact" or threshold >= 1:
        return MatchResult("none", None, None, None, None, 0, 0)
    needed = fuzzy_work(text, quote)
    budget = budget if budget is not None else WorkBudget(FUZZY_WORK_PER_CALL)
    budget.spend(needed)
    try:
        span = best_fuzzy_span(hay.codes, needle, threshold)
    except MatchTooCostly:
        budget.spent -= needed  # refused, so not spent
        raise
    if span is None:
        return MatchResult("none", None, None, None, None, 0, needed)
    start, end = hay.to_original(*span)
    matched = text[start:end]
    score = _similarity(needle, matched if case_sensitive else matched.casefold())
    if score < threshold:
        return MatchResult("none", None, None, None, None, 0, needed)
    return MatchResult(
        "fuzzy", round(score, 3), start, end, context_window(text, start, end), 1, needed
    )
