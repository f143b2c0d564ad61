"""Pure-Python text engine: normalisation, matching, passages. No Django, no I/O."""
