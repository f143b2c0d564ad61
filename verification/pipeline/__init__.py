"""The verification pipeline: admit, fetch, read pages, match, record; single and batch routes."""
