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
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

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


_INVISIBLE_RE = re.compile(f"[{_char_class(_INVISIBLE_RANGES)}]+")
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
_CLUSTER_RE = re.compile(f".[{_char_class(_ranges(_joining_codepoints()))}]*", re.DOTALL)
# Any whitespace run other than a single plain space.
_UNTIDY_SPACE_RE = re.compile(r"[^\S ]\s*| \s+")


@dataclass(frozen=True, eq=False)
class Normalised:
    """Normalised text plus the position map back to the input it came from."""

    text: str
    source_length: int
    # _map[i] is the input position of normalised code point i; _map[len(text)]
    # is len(input). None means the identity (nothing moved).
    _map: np.ndarray | None = field(default=None, repr=False)

    def to_source(self, i: int) -> int:
        """Position in the input of normalised code point ``i`` (0 <= i <= len(text))."""
        if not 0 <= i <= len(self.text):
            raise IndexError(f"position {i} is outside 0..{len(self.text)}")
        if self._map is None:
            return i
        return int(self._map[i])

    @cached_property
    def sha256(self) -> str:
        """Hex SHA-256 of the UTF-8 of the normalised text."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _apply_edits(source: str, edits: list[tuple[int, int, str]]) -> tuple[str, np.ndarray | None]:
    """Replace ``source[a:b]`` by ``r`` for each sorted edit; map output positions to source.

    Every code point of a replacement maps to the start of what it replaced;
    untouched text maps one to one; the end maps to ``len(source)``.
    """
    if not edits:
        return source, None
    pieces: list[str] = []
    lengths: list[int] = []
    origins: list[int] = []
    linear: list[bool] = []
    pos = 0
    for a, b, replacement in edits:
        if a > pos:
            pieces.append(source[pos:a])
            lengths.append(a - pos)
            origins.append(pos)
            linear.append(True)
        if replacement:
            pieces.append(replacement)
            lengths.append(len(replacement))
            origins.append(a)
            linear.append(False)
        pos = b
    if pos < len(source):
        pieces.append(source[pos:])
        lengths.append(len(source) - pos)
        origins.append(pos)
        linear.append(True)
    if not pieces:
        return "", np.array([len(source)], dtype=np.int64)
    text = "".join(pieces)
    # Built as a cumulative sum of steps: +1 inside untouched text, 0 inside a
    # replacement, and a jump at each piece start. Linear in the text, no loop.
    length = np.asarray(lengths, dtype=np.int64)
    origin = np.asarray(origins, dtype=np.int64)
    is_linear = np.asarray(linear, dtype=bool)
    starts = np.cumsum(length) - length
    last = origin + np.where(is_linear, length - 1, 0)
    steps = np.ones(len(text) + 1, dtype=np.int64)
    long_replacements = ~is_linear & (length > 1)
    if long_replacements.any():
        inner_len = length[long_replacements] - 1
        inner_start = np.repeat(starts[long_replacements] + 1, inner_len)
        inner_first = np.cumsum(inner_len) - inner_len
        offsets = np.arange(inner_len.sum()) - np.repeat(inner_first, inner_len)
        steps[inner_start + offsets] = 0
    steps[starts] = origin - np.concatenate(([0], last[:-1]))
    mapping = np.cumsum(steps)
    mapping[-1] = len(source)
    dtype = np.int32 if len(source) < 2**31 - 1 else np.int64
    return text, mapping.astype(dtype, copy=False)


def _nfkc(s: str) -> str:
    return unicodedata.normalize("NFKC", s).translate(_QUOTES_AND_DASHES)


def _nfkc_edits(source: str) -> list[tuple[int, int, str]]:
    edits: list[tuple[int, int, str]] = []
    if source.isascii():
        return edits
    for run in _NON_ASCII_RE.finditer(source):
        # The ASCII character before a run may be the base of a combining mark.
        base = max(run.start() - 1, 0)
        chunk = source[base : run.end()]
        whole = _nfkc(chunk)
        if whole == chunk:
            continue
        clustered: list[tuple[int, int, str]] = []
        produced: list[str] = []
        for cluster in _CLUSTER_RE.finditer(chunk):
            out = _nfkc(cluster.group())
            produced.append(out)
            if out != cluster.group():
                clustered.append((base + cluster.start(), base + cluster.end(), out))
        if "".join(produced) == whole:
            edits.extend(clustered)
        else:  # composition across our cluster guess: map the run as one piece
            edits.append((base, run.end(), whole))
    return edits


def _compose(outer: np.ndarray | None, inner: np.ndarray | None) -> np.ndarray | None:
    """Map through ``outer`` (later step) and then ``inner`` (earlier step)."""
    if outer is None:
        return inner
    if inner is None:
        return outer
    return inner[outer]


def normalise(text: str) -> Normalised:
    """Normalise ``text`` as the verification API specifies and keep the way back."""
    dropped = [(m.start(), m.end(), "") for m in _INVISIBLE_RE.finditer(text)]
    step1, map1 = _apply_edits(text, dropped)
    step2, map2 = _apply_edits(step1, _nfkc_edits(step1))
    end = len(step2)
    spaces = [
        (m.start(), m.end(), "" if m.start() == 0 or m.end() == end else " ")
        for m in _UNTIDY_SPACE_RE.finditer(step2)
    ]
    if step2.startswith(" ") and (not spaces or spaces[0][0] != 0):
        spaces.insert(0, (0, 1, ""))
    if step2.endswith(" ") and end > 1 and (not spaces or spaces[-1][1] != end):
        spaces.append((end - 1, end, ""))
    step3, map3 = _apply_edits(step2, spaces)
    return Normalised(
        text=step3, source_length=len(text), _map=_compose(_compose(map3, map2), map1)
    )
