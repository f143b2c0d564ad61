"""Pure core of the fact ledger: the deterministic extractor, dates and interval rules."""
