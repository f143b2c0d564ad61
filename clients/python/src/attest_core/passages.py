"""Passages that share most of a paraphrased claim's words: the ``lexical-v2`` scorer.

Units. The page is cut into sentences: one ends at ``.``, ``!`` or ``?`` (a run
of them, then any closing ``"')]``) before whitespace or the end of the text,
at ``。`` in any case, and at ``!``/``?`` directly before a Chinese or Japanese
character (NFKC turned the full-width forms into ASCII). A ``.`` does not end
one after a listed short abbreviation (``Dr.``, ``Mr.``, ``vs.``, ``Fig.``, ...),
after a dotted one (``e.g.``, ``i.e.``, ``U.S.``, ``a.m.``) or after a single
capital (an initial, ``J. Smith``); after ``etc.`` it ends one only when a
capital letter follows. A sentence is one unit however long it is; only text
that no sentence end closes (what follows the last one, or a whole page without
any) is cut after every 40th word (space-separated, each CJK character counting
as one), so such text still yields units. A passage is one unit or two
neighbouring ones.

Words. Letters (with inner apostrophes), numbers (``1,000`` and ``12.5``
whole) and ``%`` are words, and so is each Chinese or Japanese character.
Words compare lower-cased and through the Snowball English stemmer
(``snowballstemmer``), so "reported" meets "report"; ``%`` is the word
"percent"; numbers compare by value (``1,000`` = ``1000``, ``12.0`` = ``12``).
The Snowball project's English stop-word list is ignored.

Score (0 to 1). With N units on the page and ``df(w)`` the units holding
word ``w``, a claim word weighs the BM25 inverse document frequency (as
Lucene computes it, always positive) over the page's units:

    weight(w) = ln(1 + (N - df(w) + 0.5) / (df(w) + 0.5))

so a word found in few units of this page counts for more, and a word the
page lacks entirely weighs most. This weighting reproduces the three scores
of the published demo-page example (0.583, 0.217, 0.136). Then

    score = 0.75 * (weight of the claim's distinct words the passage holds
                    / weight of all the claim's distinct words)
          + 0.25 * (claim word pairs the passage holds / claim word pairs)

A claim word pair is two neighbouring claim words once stop words are
removed (unordered, so "drop in emissions" meets "emissions dropped"); a
unit holds it when the two words appear in it with only stop words or
punctuation between them. A claim with a single word has no pairs, and its
score is its word share alone.

Choice. Every unit holding a claim word, alone and with each neighbour, is a
candidate; candidates are ranked by score, then the shorter, then the
earlier, and taken greedily without overlap, at most 3.

Flags never change the score or the order: ``negation_mismatch`` when exactly
one of claim and passage has an English negation (``not``, ``no``, ``never``,
``n't``, ``without``, ...); ``number_mismatch`` when the claim has a number the
passage lacks and the passage one the claim lacks. ``missing`` lists the claim
words the passage lacks, in the claim's order and spelling, at most 20.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import pairwise
from typing import Literal

import numpy as np
import snowballstemmer

from attest_core.codepoints import codepoints, is_space
from attest_core.context import context_window

SCORER = "lexical-v2"
MAX_PASSAGES = 3
MAX_WORDS_PER_UNIT = 40
MAX_MISSING = 20
TEXT_CAP = 800
NOTE = (
    "Passages are ranked by the claim's words they share, weighted by how rare each is on "
    "the page, and by shared word pairs. They are evidence for you to read, not a verdict: "
    "check negation, numbers, dates and the missing words yourself."
)


def _words(listing: str) -> frozenset[str]:
    return frozenset(listing.split())


# The Snowball project's English stop-word list.
STOP_WORDS = _words(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing would should could ought i'm you're he's she's it's we're they're i've
    you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll
    they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
    wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's
    there's when's where's why's how's a an the and but if or because as until while of at by
    for with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how all
    any both each few more most other some such no nor not only own same so than too very
    """
)
NEGATIONS = _words("not no never none nobody nothing neither nor nowhere without cannot")
ABBREVIATIONS = _words(
    """
    mr mrs ms dr prof sr jr st mt rev hon gen gov sen rep capt lt col sgt vs cf viz al fig
    figs eq eqs vol vols pp approx ca dept
    """
)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_LETTER = f"[^\\W\\d_{_CJK}]"
_TOKEN_RE = re.compile(
    f"(?P<cjk>[{_CJK}])|(?P<num>\\d+(?:[.,]\\d+)*)|(?P<word>{_LETTER}+(?:'{_LETTER}+)*)|(?P<pct>%)"
)
_CJK_RE = re.compile(f"[{_CJK}]")
_LETTER_RE = re.compile(_LETTER)
_CUT_WORD_RE = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")
# Candidates only; _ends_sentence decides (a plain pattern scans several times faster).
_SENTENCE_END_RE = re.compile("[.!?。｡][.!?。｡\"')\\]」』]*")
_SPACED_END_RE = re.compile("[.!?][.!?\"')\\]」』]*(?=\\s|\\Z)")
_WORD_BEFORE_RE = re.compile("[^\\s(\\[\"']*\\Z")
_DOTTED_RE = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")

_stemmer = snowballstemmer.stemmer("english")


class ClaimHasNoWords(ValueError):
    """The claim has nothing to compare: only common words or punctuation."""

    code = "claim_has_no_words"


@dataclass(frozen=True)
class Passage:
    start: int
    end: int
    score: float
    text: str
    missing: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PassagesResult:
    match: Literal["passages", "none"]
    score: float | None
    start: int | None
    end: int | None
    context: str | None
    occurrences: int
    passages: list[Passage]
    scorer: str = SCORER
    note: str = NOTE


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stem: str = _stemmer.stemWord(word)  # snowballstemmer ships no types
    return stem


def _word_key(word: str) -> str | None:
    """The key ``_token`` gives a word: None for a stop word, else its stem (cached)."""
    lower = word.lower()
    return None if lower in STOP_WORDS else _stem(lower)


def _number_key(token: str) -> str:
    """A number's value as text: ``1,000`` -> ``1000``, ``12.0`` -> ``12``, ``012`` -> ``12``."""
    if _THOUSANDS_RE.fullmatch(token):
        token = token.replace(",", "")
    if not token.isascii() or "," in token or token.count(".") > 1:
        return token  # "1,5", "1.2.3": compared as written
    whole, _, fraction = token.partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    text: str
    key: str | None  # None for a stop word
    number: str | None
    negation: bool


def _token(m: re.Match[str]) -> _Token:
    kind, text = m.lastgroup, m.group()
    if kind == "word":
        lower = text.lower()
        negation = lower in NEGATIONS or lower.endswith("n't")
        key = _word_key(text)
        return _Token(m.start(), m.end(), text, key, None, negation)
    if kind == "num":
        number = _number_key(text)
        return _Token(m.start(), m.end(), text, number, number, False)
    if kind == "pct":
        return _Token(m.start(), m.end(), text, "percent", None, False)
    return _Token(m.start(), m.end(), text, text, None, False)


def _tokens(text: str, start: int = 0, end: int | None = None) -> list[_Token]:
    return [_token(m) for m in _TOKEN_RE.finditer(text, start, len(text) if end is None else end)]


@dataclass(frozen=True)
class _Claim:
    keys: list[str]  # distinct content words, in the claim's order
    spelling: dict[str, str]
    pairs: frozenset[frozenset[str]]
    numbers: frozenset[str]
    negated: bool


def _read_claim(claim: str) -> _Claim:
    tokens = _tokens(claim)
    content = [t for t in tokens if t.key is not None]
    if not content:
        raise ClaimHasNoWords(
            "The claim has no words to compare, only common words or punctuation."
        )
    spelling: dict[str, str] = {}
    for t in content:
        assert t.key is not None  # content holds only the tokens with a key
        spelling.setdefault(t.key, t.text)
    pairs = frozenset(
        frozenset((a.key, b.key))
        for a, b in pairwise(content)
        if a.key is not None and b.key is not None and a.key != b.key  # keyed: for mypy
    )
    return _Claim(
        keys=list(spelling),
        spelling=spelling,
        pairs=pairs,
        numbers=frozenset(t.number for t in tokens if t.number is not None),
        negated=any(t.negation for t in tokens),
    )


def _ends_sentence(text: str, m: re.Match[str]) -> bool:
    run, after = m.group(), m.end()
    if "。" in run or "｡" in run:
        return True
    following = text[after : after + 1]
    if following and not following.isspace():
        return bool(_CJK_RE.match(following)) and ("!" in run or "?" in run)
    return run[0] != "." or run.startswith("..") or not _abbreviated(text, m.start(), after)


def _abbreviated(text: str, stop: int, after: int) -> bool:
    """Is the full stop at ``stop`` (followed by whitespace or the end) an abbreviation's?"""
    # The word before the full stop, looked for in a short window: abbreviations are short.
    found = _WORD_BEFORE_RE.search(text, max(stop - 12, 0), stop)
    assert found is not None  # the pattern matches an empty word too
    word = found.group()
    lower = word.lower()
    if lower in ABBREVIATIONS or ("." in word and _DOTTED_RE.fullmatch(word)):
        return True
    if len(word) == 1 and word.isupper():
        return True  # an initial
    if lower == "etc":
        nxt = text[after : after + 2].lstrip()
        return bool(nxt) and not nxt[0].isupper()
    return False


def _sentence_ends(text: str, has_cjk: bool) -> list[int]:
    if has_cjk or "。" in text or "｡" in text:
        return [m.end() for m in _SENTENCE_END_RE.finditer(text) if _ends_sentence(text, m)]
    if text.isascii():
        return _ascii_sentence_ends(text)
    # Without CJK, only a run before whitespace or the end can end a sentence,
    # which the pattern checks itself; only full stops need a closer look.
    return [
        m.end()
        for m in _SPACED_END_RE.finditer(text)
        if m.group()[0] != "."
        or m.group().startswith("..")
        or not _abbreviated(text, m.start(), m.end())
    ]


def _byte_table(members: bytes) -> bytes:
    """A ``bytes.translate`` table: 1 for ``members``, 0 for every other byte."""
    return bytes(int(b in members) for b in range(256))


def _marked(data: bytes, table: bytes) -> np.ndarray:
    """Which bytes of ``data`` the table marks, at ``bytes.translate`` speed."""
    return np.frombuffer(data.translate(table), dtype=bool)


_STOPS = _byte_table(b".!?")
_RUN = _byte_table(b".!?\"')]")  # what a run of sentence-ending marks may hold
_WORD_EDGE = _byte_table(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f([\"'")  # whitespace and ( [ " '
_RUN_FLAGS = np.frombuffer(_RUN, dtype=bool)
_ABBREVIATION_LETTERS = max(len(a) for a in ABBREVIATIONS)


def _packed(words: np.ndarray, length: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each word (start, length at most 8) lower-cased and packed into one integer."""
    value = np.zeros(len(words), dtype=np.uint64)
    for j in range(_ABBREVIATION_LETTERS):
        byte = codes[np.minimum(words + j, len(codes) - 1)].astype(np.uint64)
        byte |= ((byte >= 65) & (byte <= 90)).astype(np.uint64) << np.uint64(5)  # A-Z to a-z
        value |= np.where(j < length, byte, 0).astype(np.uint64) << np.uint64(8 * j)
    return value


def _pack_word(word: str) -> int:
    return sum(ord(c) << (8 * j) for j, c in enumerate(word))


_PACKED_ABBREVIATIONS = np.array(sorted(_pack_word(a) for a in ABBREVIATIONS), dtype=np.uint64)
_PACKED_ETC = _pack_word("etc")


def _run_ends(data: bytes, marks: np.ndarray) -> np.ndarray:
    """Where the run of characters a sentence end may hold, from each mark on, stops."""
    codes = np.frombuffer(data, dtype=np.uint8)
    n = len(data)
    ends = marks.astype(np.int64) + 1
    # Runs are a few characters long: step them all together, a few times.
    for _ in range(8):
        going = np.flatnonzero(ends < n)
        going = going[np.take(_RUN_FLAGS, codes[ends[going]])]
        if not len(going):
            return ends
        ends[going] += 1
    # Long runs of marks (rare): look ahead from each, in growing steps; a mark
    # whose run reaches no further than the last one found ends where it does.
    last = -1
    for i in going.tolist():
        at = int(ends[i])
        if at <= last:
            ends[i] = last
            continue
        width = 64
        while at < n:
            solid = np.flatnonzero(~np.take(_RUN_FLAGS, codes[at : at + width]))
            if len(solid):
                at += int(solid[0])
                break
            at, width = min(at + width, n), 2 * width
        ends[i] = last = at
    return ends


def _ascii_sentence_ends(text: str) -> list[int]:
    """``_ends_sentence`` for every run of an ASCII page at once, in numpy.

    A run starts at a mark that no earlier run's marks reach, ends where the
    run's characters end, and counts only before whitespace or the end; a
    full stop after a word that may be an abbreviation (short, or dotted) is
    looked up as a packed integer, and only ``etc.`` and dotted words go
    through ``_abbreviated``.
    """
    data = text.encode("ascii")
    codes = np.frombuffer(data, dtype=np.uint8)
    n = len(codes)
    marks = _positions(codes, lambda c: _marked(c.tobytes(), _STOPS))
    if not len(marks):
        return []
    run_end = _run_ends(data, marks)
    # A mark starts a run unless the run before it reaches it.
    first = np.concatenate(([True], run_end[:-1] <= marks[1:]))
    spaced = (run_end == n) | is_space(codes[np.minimum(run_end, n - 1)])
    keep = first & spaced
    starts, ends = marks[keep], run_end[keep]
    # Full stops not followed by another: the word before may make them no end.
    nxt = codes[np.minimum(starts + 1, n - 1)]
    lone = (codes[starts] == 46) & ((starts + 1 == n) | (nxt != 46))
    stops = starts[lone]
    # The word before each: the 12 characters before the stop, from the last
    # word edge among them on (one small row per stop, not a page of positions).
    before = stops[:, None] + np.arange(-12, 0, dtype=np.int32)
    seen = before >= 0
    window = codes[np.maximum(before, 0)]
    edge = np.frombuffer(window.tobytes().translate(_WORD_EDGE), dtype=bool)
    edge = edge.reshape(window.shape) & seen
    last_edge = np.where(edge.any(axis=1), 11 - np.argmax(edge[:, ::-1], axis=1), -1)
    word = np.maximum(stops - 12 + last_edge + 1, 0)
    length = stops - word
    dotted = ((window == 46) & seen & (before >= word[:, None])).any(axis=1)
    short = (length <= _ABBREVIATION_LETTERS) & ~dotted
    packed = _packed(word, length, codes)
    listed = short & np.isin(packed, _PACKED_ABBREVIATIONS)
    initial = (length == 1) & (codes[word] >= 65) & (codes[word] <= 90)
    doubtful = dotted | (short & (packed == _PACKED_ETC))
    not_end = listed | initial
    # ``ends[lone]`` once: taken inside the loop it cost a page of marks per doubtful stop.
    stop_ends = ends[lone]
    for i in np.flatnonzero(doubtful).tolist():
        not_end[i] = _abbreviated(text, int(stops[i]), int(stop_ends[i]))
    ends[np.flatnonzero(lone)[not_end]] = -1
    sentence_ends: list[int] = ends[ends >= 0].tolist()
    return sentence_ends


def split_units(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as ``(start, end)`` pairs; text after the last sentence
    end (all of it, on a page with none) cut after every 40th word.

    A sentence is one unit however long it is: only text that no sentence end closes is
    cut. The sentences' bounds and the whitespace before each are worked out in numpy on
    one flag a character (no array of positions as long as the page).
    """
    if not text:
        return []
    has_cjk = not text.isascii() and _CJK_RE.search(text) is not None
    sentence_ends = _sentence_ends(text, has_cjk)
    closed = bool(sentence_ends) and sentence_ends[-1] == len(text)
    ends = np.array([*sentence_ends, len(text)], dtype=np.int64)
    starts = np.concatenate(([0], ends[:-1]))
    codes = codepoints(text)
    # Each sentence starts at its first character that is not whitespace (a
    # start on whitespace moves past the run holding it); runs are short, so
    # all starts step together, and the few still on whitespace then look ahead.
    n = len(codes)
    for _ in range(4):
        on = np.flatnonzero(starts < n)
        on = on[is_space(codes[starts[on]])]
        if not len(on):
            break
        starts[on] += 1
    else:
        for i in np.flatnonzero((starts < n) & (starts < ends)).tolist():
            s, e = int(starts[i]), int(ends[i])
            solid = np.flatnonzero(~is_space(codes[s:e]))
            starts[i] = s + int(solid[0]) if len(solid) else e
    keep = starts < ends
    units = list(zip(starts[keep].tolist(), ends[keep].tolist(), strict=True))
    if not closed and units and units[-1][1] == len(text):
        start, end = units.pop()
        units.extend(_cut_every_40_words(text, codes, start, end))
    return units


def _cut_every_40_words(
    text: str, codes: np.ndarray, start: int, end: int
) -> list[tuple[int, int]]:
    """``text[start:end]``, which no sentence end closes, cut after every 40th word.

    Words are separated by spaces, and each Chinese or Japanese character is one; each
    unit runs from the first to the last character of its words.
    """
    if _CJK_RE.search(text, start, end) is not None:
        found = [(m.start(), m.end()) for m in _CUT_WORD_RE.finditer(text, start, end)]
        return [
            (found[j][0], found[min(j + MAX_WORDS_PER_UNIT, len(found)) - 1][1])
            for j in range(0, len(found), MAX_WORDS_PER_UNIT)
        ]
    if text.count(" ", start, end) < MAX_WORDS_PER_UNIT:
        return [(start, end)]
    # The spaces of this text only, found in numpy: it may be a whole page long.
    inside = _positions(codes[start:end], lambda c: c == 32).astype(np.int64) + start
    bounds = np.concatenate(([start - 1], inside, [end]))
    word_starts, word_ends = bounds[:-1] + 1, bounds[1:]
    solid = word_ends > word_starts
    word_starts, word_ends = word_starts[solid], word_ends[solid]
    firsts = np.arange(0, len(word_starts), MAX_WORDS_PER_UNIT)
    lasts = np.minimum(firsts + MAX_WORDS_PER_UNIT, len(word_starts)) - 1
    return list(zip(word_starts[firsts].tolist(), word_ends[lasts].tolist(), strict=True))


def _positions(codes: np.ndarray, flag: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Where ``flag`` holds, as 32-bit positions, worked out a block at a time.

    No page-long array of flags or of 64-bit positions is ever made: that is
    what keeps a 5 MB page's passages in a few megabytes.
    """
    block = 1 << 18
    found = [
        np.flatnonzero(flag(codes[at : at + block])).astype(np.int32) + np.int32(at)
        for at in range(0, len(codes), block)
    ]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int32)


def _word_prefixes(key: str) -> list[str]:
    """Beginnings every word that stems to ``key`` has (lower-cased).

    A Snowball English stem differs from its word at most in its last letter
    plus a suffix (happy -> happi, stability -> stabl), so a word stemming to
    ``key`` starts with ``key`` minus its last letter. The exceptions are the
    stemmer's special forms dying/lying/tying. Four letters are enough to look.
    """
    prefixes = [key[: max(1, min(len(key) - 1, 4))]]
    if key in ("die", "lie", "tie"):
        prefixes.append(key[0] + "y")
    return prefixes


def _number_needles(key: str) -> list[str]:
    """Substrings found in every written form of the number ``key`` (1000: 1000, 1,000, 01000.0)."""
    whole = key.partition(".")[0]
    needles = [whole[:3]]
    if len(whole) > 3 and whole.isdigit():
        needles.append(whole[: len(whole) % 3 or 3] + ",")
    return needles


def _claim_hits(text: str, claim: _Claim) -> list[_Token]:
    """The page's words that are claim words, in order, without tokenising the whole page.

    Each claim word's necessary beginning is searched with ``str.find`` on a
    lower-cased copy (same length: only ``İ`` lowers to two characters), and
    only the page words found that way are tokenised and stemmed.
    """
    lower = text.lower()
    if len(lower) != len(text):
        lower = text.replace("\u0130", "I").lower()
    wanted = set(claim.keys)
    found: dict[int, _Token] = {}

    def take(start: int) -> None:
        if start in found:
            return
        m = _TOKEN_RE.match(text, start)
        if m is None:
            return
        # Most words found by their beginning are other words ("internal" for
        # "interpret"): their key rules them out before a token is made.
        if m.lastgroup == "word" and _word_key(m.group()) not in wanted:
            return
        token = _token(m)
        if token.key in wanted:
            found[start] = token

    def starts_word(i: int) -> bool:
        return i == 0 or not (
            _LETTER_RE.match(text, i - 1)
            or (i > 1 and text[i - 1] == "'" and _LETTER_RE.match(text, i - 2))
        )

    def number_start(i: int) -> int:
        """Start of the number holding position ``i`` (``12`` inside ``1,120.5``)."""
        while i > 0 and (
            text[i - 1].isdecimal() or (text[i - 1] in ".," and i > 1 and text[i - 2].isdecimal())
        ):
            i -= 1
        return i

    def scan(needle: str, kind: str) -> None:
        at = lower.find(needle)
        while at != -1:
            if kind == "char":  # a CJK character or % is a word by itself
                take(at)
            elif kind == "number":
                take(number_start(at))
            elif starts_word(at):
                take(at)
            at = lower.find(needle, at + 1)

    for key in claim.keys:
        if key in claim.numbers:
            for needle in _number_needles(key):
                scan(needle, "number")
        elif _CJK_RE.fullmatch(key):
            scan(key, "char")
        else:
            for prefix in _word_prefixes(key):
                # İ lowers to i + U+0307 in the key but to a plain i in ``lower``.
                for needle in {prefix, prefix.replace("\u0307", "")} - {""}:
                    scan(needle, "word")
            if key == "percent":
                scan("%", "char")
    return [found[i] for i in sorted(found)]


@dataclass(frozen=True)
class _Candidate:
    first: int  # unit indexes, inclusive
    last: int
    start: int
    end: int
    words: int  # bit i set: the passage holds the claim's i-th word
    score: float


def find_passages(text: str, claim: str) -> PassagesResult:
    """The (at most 3) passages of ``text`` that best share the claim's words.

    ``text`` and ``claim`` are normalised. Raises ``ClaimHasNoWords``.
    """
    wanted = _read_claim(claim)
    units = split_units(text)
    bit = {key: 1 << i for i, key in enumerate(wanted.keys)}
    pair_bit = {pair: 1 << i for i, pair in enumerate(sorted(wanted.pairs, key=sorted))}
    words_in, hits_in = _hits_by_unit(text, wanted, units, bit)
    if not words_in:
        return PassagesResult("none", None, None, None, None, 0, [])

    # Units holding each set of claim words, then each word's count: few distinct sets.
    held_by = Counter(words_in.values())
    df = {key: sum(c for held, c in held_by.items() if held & bit[key]) for key in wanted.keys}
    n = len(units)
    weight = {key: math.log(1 + (n - df[key] + 0.5) / (df[key] + 0.5)) for key in wanted.keys}
    total_weight = sum(weight[key] for key in wanted.keys)
    pairs_in = {
        i: sum(pair_bit[p] for p in _pairs_held(text, hits, wanted.pairs))
        for i, hits in hits_in.items()
    }

    @cache
    def score(words: int, pairs: int) -> float:
        word_share = sum(weight[k] for k in wanted.keys if words & bit[k]) / total_weight
        pair_share = pairs.bit_count() / len(pair_bit) if pair_bit else word_share
        return 0.75 * word_share + 0.25 * pair_share

    # Ranked as plain tuples (score, then the shorter, then the earlier: no two
    # candidates tie on all three); only those taken become candidates.
    ranked = []
    spans = {(a, b) for i in words_in for a, b in ((i, i), (i - 1, i), (i, i + 1))}
    for first, last in spans:
        if first < 0 or last >= len(units):
            continue
        words = words_in.get(first, 0) | words_in.get(last, 0)
        pairs = pairs_in.get(first, 0) | pairs_in.get(last, 0)
        start, end, value = units[first][0], units[last][1], score(words, pairs)
        ranked.append((-value, end - start, start, first, last, end, words, value))
    ranked.sort()
    candidates = (
        _Candidate(first, last, start, end, words, value)
        for _, _, start, first, last, end, words, value in ranked
    )
    passages = [_passage(text, c, wanted) for c in _best_apart(candidates)]
    best = passages[0]
    return PassagesResult(
        "passages",
        best.score,
        best.start,
        best.end,
        context_window(text, best.start, best.end),
        len(passages),
        passages,
    )


def _hits_by_unit(
    text: str, wanted: _Claim, units: list[tuple[int, int]], bit: dict[str, int]
) -> tuple[dict[int, int], dict[int, list[_Token]]]:
    """Per unit, the bit set of the claim words it holds and its hits in text order."""
    unit_starts = [u[0] for u in units]
    words_in: dict[int, int] = {}
    hits_in: dict[int, list[_Token]] = {}
    for token in _claim_hits(text, wanted):
        i = bisect_right(unit_starts, token.start) - 1
        if i < 0 or token.start >= units[i][1]:
            continue
        words_in[i] = words_in.get(i, 0) | bit[token.key]  # type: ignore[index]
        hits_in.setdefault(i, []).append(token)
    return words_in, hits_in


def _best_apart(candidates: Iterable[_Candidate]) -> list[_Candidate]:
    """The best candidates (sorted best first) that share no unit, at most MAX_PASSAGES."""
    taken: list[_Candidate] = []
    used: set[int] = set()
    for c in candidates:
        if c.first not in used and c.last not in used:
            taken.append(c)
            used.update((c.first, c.last))
            if len(taken) == MAX_PASSAGES:
                break
    return taken


def _pairs_held(
    text: str, hits: list[_Token], pairs: frozenset[frozenset[str]]
) -> set[frozenset[str]]:
    held: set[frozenset[str]] = set()
    for a, b in pairwise(hits):
        assert a.key is not None and b.key is not None  # hits are claim words, all keyed
        pair = frozenset((a.key, b.key))
        if pair in pairs and pair not in held:
            between = _tokens(text, a.end, b.start)
            if all(t.key is None for t in between):
                held.add(pair)
    return held


def _passage(text: str, c: _Candidate, claim: _Claim) -> Passage:
    body = text[c.start : c.end]
    tokens = _tokens(body)
    numbers = {t.number for t in tokens if t.number is not None}
    flags = []
    if claim.negated != any(t.negation for t in tokens):
        flags.append("negation_mismatch")
    if claim.numbers - numbers and numbers - claim.numbers:
        flags.append("number_mismatch")
    missing = [claim.spelling[key] for i, key in enumerate(claim.keys) if not c.words >> i & 1][
        :MAX_MISSING
    ]
    shown = body if len(body) <= TEXT_CAP else body[: TEXT_CAP - 3] + "..."
    return Passage(c.start, c.end, round(c.score, 3), shown, missing, flags)
