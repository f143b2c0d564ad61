"""The strict request fields' schema patterns mean what the fields do, to every reader."""

from __future__ import annotations

import re
import sys

from attest.fields import WHITESPACE_CLASS


def test_the_whitespace_class_is_exactly_what_str_strip_trims():
    spelled_out = re.compile(f"[{WHITESPACE_CLASS}]")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert bool(spelled_out.fullmatch(char)) == char.isspace(), hex(code)
