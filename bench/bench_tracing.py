"""Tracing off costs no CPU: a worker's CPU per request with this code and tracing off,
against the code before tracing and metrics (``BENCH_TRACING_BASELINE``, a git revision,
a9ae661 by default: extracted into a scratch directory), and with tracing on (OTLP to a
collector on loopback), each a one-worker gunicorn serving ``/v1/sample/quote`` (the real
pipeline on the demo page). Rounds of ``BENCH_TRACING_REQUESTS`` (200) requests go to the
three servers in turn (``BENCH_TRACING_ROUNDS``, 5), so load changes hit all three alike;
the figure is the worker's user+sys CPU (from /proc) per request, the median round.

``python -m bench tracing``; prints the load average beside the figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = int(os.environ.get("BENCH_TRACING_REQUESTS", "200"))
ROUNDS = int(os.environ.get("BENCH_TRACING_ROUNDS", "5"))
BASELINE = os.environ.get("BENCH_TRACING_BASELINE", "a9ae661")


def _worker_cpu(master: int) -> float:
    """User+sys CPU seconds of the (one) worker of the gunicorn whose master is ``master``."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    fields = Path(f"/proc/{children[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _serve(stack: ExitStack, name: str, cwd: Path, env: dict[str, str], tmp: Path):
    """A one-worker gunicorn run from ``cwd``: the code there is what it imports (the
    process's directory comes first on its path, before the editable install)."""
    from tests.live_service import free_port, gunicorn_command, stop, wait_answering

    port = free_port()
    log = tmp / f"{name}.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            gunicorn_command(port, workers=1, threads=1),
            cwd=cwd,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    stack.callback(stop, server)
    base = f"http://127.0.0.1:{port}"
    wait_answering(base, server, log, 120)
    return name, base, server.pid


def main() -> None:
    from tests.live_service import migrate, server_env
    from tests.ops.otlp_collector import OtlpCollector

    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        tmp = Path(scratch)
        baseline = tmp / "baseline"
        baseline.mkdir()
        archive = subprocess.run(
            ["git", "archive", BASELINE], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
        collector = stack.enter_context(OtlpCollector())
        env = server_env(
            DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}",
            ATTEST_VAR_DIR=str(tmp),
            ATTEST_UNPAID_RATE="1000000/m",
            LOG_LEVEL="WARNING",
        )
        migrate(env)
        subprocess.run(
            [sys.executable, "manage.py", "ensure_signing_key"], cwd=ROOT, env=env, check=True
        )
        traced = {
            **env,
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        }
        servers = [
            _serve(stack, "before (a9ae661)", baseline, env, tmp),
            _serve(stack, "tracing off", ROOT, env, tmp),
            _serve(stack, "tracing on", ROOT, traced, tmp),
        ]
        # The baseline has no /metrics: proof it is the old code that answers.
        assert httpx.get(f"{servers[0][1]}/metrics").status_code == 404
        per_request: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        with httpx.Client(timeout=60) as client:
            for _ in range(ROUNDS):
                for name, base, pid in servers:
                    client.get(f"{base}/v1/sample/quote")  # warm
                    before = _worker_cpu(pid)
                    for _ in range(REQUESTS):
                        assert client.get(f"{base}/v1/sample/quote").status_code == 200
                    per_request[name].append((_worker_cpu(pid) - before) / REQUESTS)
        time.sleep(0.5)
        load = os.getloadavg()
        reference = statistics.median(per_request[servers[0][0]])
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"{'server':<20} {'CPU ms/request (median of rounds)':>34} {'vs before':>10}")
        for name, rounds in per_request.items():
            median = statistics.median(rounds)
            print(f"{name:<20} {median * 1000:>34.2f} {median / reference:>10.3f}")
        print(f"spans received by the collector: {len(collector.spans)}")


if __name__ == "__main__":
    main()
