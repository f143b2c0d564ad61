"""Benchmarks: run all with `make bench`, one with `python -m bench NAME`."""
