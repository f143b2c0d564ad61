"""The JSON body parser: DRF's, with nesting too deep to parse refused as bad JSON."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JSONBodyParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # DRF turns only ValueError into a 400; a body nested past the interpreter's
            # recursion limit would otherwise answer 500.
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
