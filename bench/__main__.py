"""Run every bench/bench_*.py module's main(), or only those named on the command line."""

from __future__ import annotations

import importlib
import subprocess
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
    if len(wanted) == 1:
        print(f"== {wanted[0]}", flush=True)
        importlib.import_module(f"bench.bench_{wanted[0]}").main()
        return 0
    # One process each: a benchmark sets Django up on its own database (a scratch SQLite
    # file, or DATABASE_URL), and a process can set Django up only once, so in one process
    # every later benchmark ran on the first one's scratch file (bench_ledger then skipped).
    failed = [
        name
        for name in wanted
        if subprocess.run([sys.executable, "-m", "bench", name], check=False).returncode
    ]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
