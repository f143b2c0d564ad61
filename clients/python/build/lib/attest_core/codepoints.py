"""Strings as numpy arrays of code points, for the engine's passes over whole pages."""

from __future__ import annotations

import numpy as np


def codepoints(s: str) -> np.ndarray:
    """Code points of ``s`` in the narrowest unsigned type that holds them all (read-only)."""
    try:
        return np.frombuffer(s.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        pass
    # surrogatepass: a lone surrogate (possible in a str from JSON) is one code point.
    wide = np.frombuffer(s.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    if len(wide) == len(s):  # nothing beyond the BMP
        return wide
    return np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _whitespace_table() -> np.ndarray:
    """``str.isspace`` for every BMP code point (no whitespace lies beyond it)."""
    table = np.zeros(0x10000, dtype=bool)
    table[[cp for cp in range(0x10000) if chr(cp).isspace()]] = True
    return table


_WHITESPACE = _whitespace_table()
_LATIN_WHITESPACE = bytes(int(chr(b).isspace()) for b in range(256))


def is_space(codes: np.ndarray) -> np.ndarray:
    """``str.isspace`` of each code point, as booleans."""
    if codes.dtype == np.uint8:  # bytes.translate: C speed, no index conversion
        return np.frombuffer(codes.tobytes().translate(_LATIN_WHITESPACE), dtype=bool)
    if codes.dtype == np.uint32:
        return np.take(_WHITESPACE, codes & 0xFFFF) & (codes < 0x10000)
    return np.take(_WHITESPACE, codes)
