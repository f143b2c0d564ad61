"""The network guard: which addresses may be fetched, the one guarded fetcher, robots.txt."""
