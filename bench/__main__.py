"""Run every bench/bench_*.py module's main(), or only those named on the command line."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    wanted = argv or names
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; have: {', '.join(names)}")
        return 2
    for name in wanted:
        print(f"== {name}", flush=True)
        importlib.import_module(f"bench.bench_{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
