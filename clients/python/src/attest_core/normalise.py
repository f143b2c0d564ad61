"""Text normalisation shared by pages and quotes, with a map back to input positions.

The steps, in this order (each keeps a position map, and the maps compose):

1. Invisible characters are dropped: zero-width space/joiners, soft hyphen,
   byte-order mark, bidirectional marks, embeddings and isolates, word joiner
   and invisible operators, variation selectors, tag characters, Hangul
   fillers, lone surrogates and C0/C1 control characters that are not
   whitespace. This runs
   before NFKC so that a dropped character can never leave an uncomposed
   base + mark pair behind (which would make the result not idempotent).
2. Unicode NFKC, then curly single quotes (and the modifier apostrophe) become
   ``'``, curly double quotes become ``"``, and every dash, hyphen and minus
   sign becomes ``-``.
3. Every run of whitespace (anything ``str.isspace`` accepts, including the
   spaces NFKC produces) becomes one space, and leading and trailing
   whitespace is stripped: a quote pasted with a trailing newline still
   matches, and offsets never point at padding.

``normalise(normalise(x).text).text == normalise(x).text`` for every ``x``.

How it is fast: the text is handled as an array of code points in numpy.
Invisible characters and whitespace are found by lookup tables over the
Basic Multilingual Plane; a character whose NFKC (with the quote and dash
mapping) is one character that cannot combine with its neighbours is
replaced in place from a third table. Only a run of non-ASCII characters
holding some other character (a combining mark, a ligature, a character
beyond the BMP, ...) is normalised in Python, cluster by cluster. The
position map is the array of input positions the kept characters came from.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np

from attest_core.codepoints import codepoints, is_space

_INVISIBLE_RANGES = [
    (0x00, 0x08),
    (0x0E, 0x1B),
    (0x7F, 0x84),
    (0x86, 0x9F),
    (0xAD, 0xAD),
    (0xD800, 0xDFFF),  # lone surrogates (a str from JSON may hold them): not text
    (0x34F, 0x34F),
    (0x61C, 0x61C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]

_QUOTES_AND_DASHES = {
    **dict.fromkeys([0x2018, 0x2019, 0x201A, 0x201B, 0x02BC], "'"),
    **dict.fromkeys([0x201C, 0x201D, 0x201E, 0x201F], '"'),
    **dict.fromkeys(
        [0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2015, 0x2212, 0x2E3A, 0x2E3B, 0xFE58, 0xFE63],
        "-",
    ),
}


def _char_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )


def _ranges(codepoints: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in sorted(codepoints):
        if out and cp == out[-1][1] + 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


@cache
def _joining_codepoints() -> list[int]:
    """Code points that may combine with the character before them under NFKC.

    A cluster boundary is placed only before other characters, so that NFKC of
    a run equals the concatenation of NFKC of its clusters. The list need not
    be perfect: a run whose clusters disagree with the whole is mapped coarsely.
    """
    joining = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul V and T jamo
    for cp in [*range(0x80, 0x20000), *range(0xE0100, 0xE01F0)]:
        ch = chr(cp)
        if unicodedata.combining(ch):
            joining.add(cp)
        decomposition = unicodedata.decomposition(ch)
        if not decomposition:
            continue
        parts = decomposition.split()
        if parts[0].startswith("<"):
            first = unicodedata.normalize("NFKD", ch)[:1]
            if first and (unicodedata.combining(first) or 0x1161 <= ord(first) <= 0x11C2):
                joining.add(cp)
        elif len(parts) == 2:
            joining.add(int(parts[1], 16))
    return sorted(joining)


@cache
def _cluster_re() -> re.Pattern[str]:
    """A character and the joining ones after it (built on first use: a scan of 130,000
    code points, which a process that never normalises should not pay for at import)."""
    return re.compile(f".[{_char_class(_ranges(_joining_codepoints()))}]*", re.DOTALL)


# In the table of simple replacements: this character needs the cluster path.
_SLOW = 0xFFFFFFFF


@dataclass(frozen=True, eq=False)
class Normalised:
    """Normalised text plus the position map back to the input it came from."""

    text: str
    source_length: int
    # _map[i] is the input position of normalised code point i; _map[len(text)]
    # is len(input). None means the identity (nothing moved), unless _source is set.
    _map: np.ndarray | None = field(default=None, repr=False)
    # The input, kept when the map is built on first use rather than with the text: most
    # pages never ask for a position back (only PDFs' page numbers do).
    _source: str | None = field(default=None, repr=False)

    def to_source(self, i: int) -> int:
        """Position in the input of normalised code point ``i`` (0 <= i <= len(text))."""
        if not 0 <= i <= len(self.text):
            raise IndexError(f"position {i} is outside 0..{len(self.text)}")
        positions = self._positions
        return i if positions is None else int(positions[i])

    @cached_property
    def _positions(self) -> np.ndarray | None:
        if self._source is None:
            return self._map
        return _normalise_mapped(self._source)._map

    @cached_property
    def sha256(self) -> str:
        """Hex SHA-256 of the UTF-8 of the normalised text."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _nfkc(s: str) -> str:
    return unicodedata.normalize("NFKC", s).translate(_QUOTES_AND_DASHES)


def _run_edits(chunk: str, base: int) -> list[tuple[int, int, str]]:
    """NFKC edits of one run of non-ASCII characters (with the character before it).

    Cluster by cluster when the clusters' NFKC add up to the run's, so each
    cluster maps to its own position; else the run is one edit.
    """
    whole = _nfkc(chunk)
    if whole == chunk:
        return []
    clustered: list[tuple[int, int, str]] = []
    produced: list[str] = []
    for cluster in _cluster_re().finditer(chunk):
        out = _nfkc(cluster.group())
        produced.append(out)
        if out != cluster.group():
            clustered.append((base + cluster.start(), base + cluster.end(), out))
    if "".join(produced) == whole:
        return clustered
    return [(base, base + len(chunk), whole)]  # composition across our cluster guess


@cache
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """For every BMP code point: dropped as invisible, and its simple replacement.

    The replacement is NFKC plus the quote and dash mapping when that is one
    character and neither it nor the result can combine with a neighbour;
    else ``_SLOW``.
    """
    invisible = np.zeros(0x10000, dtype=bool)
    for a, b in _INVISIBLE_RANGES:
        if a < 0x10000:
            invisible[a : min(b, 0xFFFF) + 1] = True
    joining = set(_joining_codepoints())
    simple = np.arange(0x10000, dtype=np.uint32)
    for cp in range(0x80, 0x10000):
        if cp in joining or invisible[cp]:
            simple[cp] = _SLOW
            continue
        out = _nfkc(chr(cp))
        simple[cp] = ord(out) if len(out) == 1 and ord(out) not in joining else _SLOW
    return invisible, simple


def prepare() -> None:
    """Build the tables now: a server calls this before its first request (so that no
    request pays for them), a command that never normalises does not pay at all."""
    _tables()
    _cluster_re()


def _narrowest(codes: np.ndarray) -> np.ndarray:
    top = int(codes.max(initial=0))
    dtype = np.uint8 if top < 0x100 else np.uint16 if top < 0x10000 else np.uint32
    return codes.astype(dtype, copy=False)


def _decode(codes: np.ndarray) -> str:
    codes = _narrowest(codes)
    if codes.dtype == np.uint8:
        return codes.tobytes().decode("latin-1")
    if codes.dtype == np.uint16:
        return codes.tobytes().decode("utf-16-le", "surrogatepass")
    return codes.tobytes().decode("utf-32-le", "surrogatepass")


def _invisible(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    if codes.dtype != np.uint32:
        return np.take(table, codes)
    bmp = codes < 0x10000
    found = np.take(table, codes & 0xFFFF) & bmp
    for a, b in _INVISIBLE_RANGES:
        if a >= 0x10000:
            found |= (codes >= a) & (codes <= b)
    return found


def _nfkc_step(
    codes: np.ndarray, origin: np.ndarray | None, simple: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Step 2 on code points: simple characters from the table, other runs cluster by cluster."""
    high = np.flatnonzero(codes >= 0x80)
    if not len(high):
        return codes, origin
    values = codes[high]
    if values.dtype == np.uint32:
        replaced = np.where(values < 0x10000, np.take(simple, values & 0xFFFF), _SLOW)
    else:
        replaced = np.take(simple, values)
    slow = replaced == _SLOW
    edits: list[tuple[int, int, str]] = []
    if slow.any():
        # Runs of consecutive non-ASCII characters, as the cluster path reads them.
        run = np.concatenate(([0], np.cumsum(np.diff(high) > 1)))
        in_slow_run = np.isin(run, run[slow])
        bounds = np.flatnonzero(np.diff(np.concatenate(([-1], run, [run[-1] + 1]))))
        text = None
        for first, last in zip(bounds[:-1].tolist(), (bounds[1:] - 1).tolist(), strict=True):
            if not in_slow_run[first]:
                continue
            if text is None:
                text = _decode(codes)
            start, end = int(high[first]), int(high[last]) + 1
            base = max(start - 1, 0)  # an ASCII character before may be a mark's base
            edits.extend(_run_edits(text[base:end], base))
        high, replaced = high[~in_slow_run], replaced[~in_slow_run]
    codes = (
        codes.astype(np.uint32)
        if replaced.max(initial=0) > np.iinfo(codes.dtype).max
        else codes.copy()
    )
    codes[high] = replaced
    if not edits:
        return codes, origin
    pieces: list[np.ndarray] = []
    origins: list[np.ndarray] = []
    pos = 0
    for a, b, out in edits:
        pieces += [codes[pos:a].astype(np.uint32), np.array([ord(c) for c in out], dtype=np.uint32)]
        if origin is not None:
            origins += [origin[pos:a], np.full(len(out), origin[a], dtype=origin.dtype)]
        pos = b
    pieces.append(codes[pos:].astype(np.uint32))
    if origin is None:
        return np.concatenate(pieces), None
    origins.append(origin[pos:])
    return np.concatenate(pieces), np.concatenate(origins)


# The invisible characters an ASCII text can hold (the C0 controls that are not whitespace).
_ASCII_INVISIBLE = bytes(
    cp for a, b in _INVISIBLE_RANGES for cp in range(a, min(b, 0x7F) + 1) if a < 0x80
)
_ASCII_SPACES = bytes(cp for cp in range(0x80) if chr(cp).isspace())
_ASCII_WHITESPACE_TO_SPACE = bytes.maketrans(_ASCII_SPACES, b" " * len(_ASCII_SPACES))


def normalise(text: str) -> Normalised:
    """Normalise ``text`` as the verification API specifies and keep the way back.

    The position map is built only when first asked for (``to_source``): most pages
    never need one. An ASCII text skips the code point arrays altogether (NFKC and the
    quote and dash mapping leave ASCII unchanged, so only invisible controls and
    whitespace can move), and whitespace is folded on the bytes.
    """
    if not text:
        return Normalised(text="", source_length=0)
    if text.isascii():
        # 1 and the first half of 3: invisible controls dropped, and every character
        # str.isspace() accepts made a space, in one pass over the bytes.
        kept = text.encode("ascii").translate(_ASCII_WHITESPACE_TO_SPACE, _ASCII_INVISIBLE)
        # 3. Each run of spaces one space, none at the ends. Halving the runs until none
        # is left keeps one copy of the text at a time, where str.split() would hold a
        # string per word (150 MB for a 15 MB page).
        while b"  " in kept:
            kept = kept.replace(b"  ", b" ")
        out = kept.strip(b" ").decode("ascii")
    else:
        codes, _ = _visible_nfkc(text, mapped=False)
        out = _decode(_fold_spaces(codes, None)[0])
    if out == text:
        return Normalised(text=text, source_length=len(text))
    return Normalised(text=out, source_length=len(text), _source=text)


def _visible_nfkc(text: str, *, mapped: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Steps 1 and 2 on code points, with each kept code point's input position if mapped."""
    invisible, simple = _tables()
    codes = codepoints(text)
    origin = np.arange(len(codes), dtype=np.int64) if mapped else None
    # 1. Invisible characters
    dropped = _invisible(codes, invisible)
    if dropped.any():
        codes = codes[~dropped]
        origin = origin[~dropped] if origin is not None else None
    # 2. NFKC, quotes and dashes
    if not text.isascii():
        codes, origin = _nfkc_step(codes, origin, simple)
    return codes, origin


def _fold_spaces(
    codes: np.ndarray, origin: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Step 3: a run of whitespace becomes one space where it starts; none at either end.

    A character is kept unless it is whitespace after whitespace; every whitespace
    character is made a space (those dropped included), then the ends are cut. The
    spaces are written arithmetically, ``c - (c - 32) * is_space`` in wrapping unsigned
    arithmetic: a masked write (``codes[mask] = 32``) cost ten times as much.
    """
    spaces = is_space(codes)
    if not spaces.any():
        return codes, origin
    first = int(np.argmin(spaces))  # the first solid character, if any
    if spaces[first]:
        return codes[:0], origin[:0] if origin is not None else None
    last = len(spaces) - 1 - int(np.argmin(spaces[::-1]))
    keep = np.empty(len(spaces), dtype=bool)
    keep[0] = True
    np.logical_and(spaces[1:], spaces[:-1], out=keep[1:])
    np.logical_not(keep[1:], out=keep[1:])
    keep[:first] = False
    keep[last + 1 :] = False
    shift = np.subtract(codes, codes.dtype.type(32))
    np.multiply(shift, spaces, out=shift, casting="unsafe")
    return np.subtract(codes, shift)[keep], origin[keep] if origin is not None else None


def _normalise_mapped(text: str) -> Normalised:
    """``normalise`` on code point arrays, with the position map built alongside."""
    if not text:
        return Normalised(text="", source_length=0)
    codes, origin = _visible_nfkc(text, mapped=True)
    assert origin is not None
    codes, origin = _fold_spaces(codes, origin)
    assert origin is not None  # given a map, _fold_spaces returns one
    out = _decode(codes)
    if len(out) == len(text) and out == text:
        return Normalised(text=text, source_length=len(text))
    dtype = np.int32 if len(text) < 2**31 - 1 else np.int64
    return Normalised(
        text=out,
        source_length=len(text),
        _map=np.append(origin, len(text)).astype(dtype, copy=False),
    )
