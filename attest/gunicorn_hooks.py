"""gunicorn server hooks for the metrics' multiprocess mode (``-c python:attest.gunicorn_hooks``).

Each worker keeps its metric values in files of its own under ``PROMETHEUS_MULTIPROC_DIR``.
Files left by an earlier run would be added to this one's counters, so the master empties
the directory as it starts; a worker that exits is marked dead, so the gauges summed over
live workers (queue places) stop counting it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prometheus_client import multiprocess

from attest.metrics import MULTIPROC_DIR_VARIABLE


def on_starting(server: Any) -> None:
    directory = os.environ.get(MULTIPROC_DIR_VARIABLE)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get(MULTIPROC_DIR_VARIABLE):
        multiprocess.mark_process_dead(worker.pid)
