"""The floor bench_verify compares verify/quote with: a minimal DRF view that fetches the page."""
