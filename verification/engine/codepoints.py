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
