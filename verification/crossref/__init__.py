"""Crossref retraction lookups for cited DOIs, and the pace every process keeps with Crossref."""
