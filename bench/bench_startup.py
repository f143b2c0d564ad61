"""Start-up: a manage.py command's cost, and `make run` from a fresh clone to /healthz.

Two parts (``BENCH_STARTUP_PARTS=commands,run``, both by default):

- **commands**: ``manage.py check``, ``help``, ``migrate --check`` and ``showmigrations``
  in this checkout (and in ``BENCH_STARTUP_BASELINE``, another checkout, if set), each run
  ``BENCH_STARTUP_ROUNDS`` times (5) interleaved, on a scratch SQLite file; the median wall
  time and user+sys CPU of each (CPU is what load inflates least).
- **run**: ``git clone`` of this checkout's HEAD into a scratch directory, then ``make run``
  on a free port, timed until ``/healthz`` first answers 200, once with the installers'
  caches as they are (warm after any earlier install) and once with ``PIP_NO_CACHE_DIR=1``
  and ``UV_NO_CACHE=1`` (every wheel downloaded again). Each phase starts when make echoes
  its command: the venv, uv, the install, migrate, ensure_signing_key, gunicorn.

The load average is printed beside every figure. ``python -m bench startup``.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from threading import Thread

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (
    ("check",),
    ("help",),
    ("migrate", "--check"),
    ("showmigrations",),
)
# Each phase starts when make echoes a line holding one of its markers (older Makefiles
# installed with pip and had no uv step).
PHASES = (
    ("venv", ("-m venv",)),
    ("uv", ('pip install --quiet "uv',)),
    ("install", ("uv pip install", "pip install --quiet -e")),
    ("migrate", ("manage.py migrate",)),
    ("signing key", ("ensure_signing_key",)),
    ("gunicorn", ("gunicorn attest.wsgi",)),
)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and user+sys CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands() -> None:
    """Each command in this checkout and, with BENCH_STARTUP_BASELINE=<another checkout>
    (such as the main branch's), there too, interleaved, with this checkout's .venv (the
    checkout's own modules come first on sys.path: python runs its manage.py)."""
    rounds = int(os.environ.get("BENCH_STARTUP_ROUNDS", "5"))
    checkouts = {"this": ROOT}
    if baseline := os.environ.get("BENCH_STARTUP_BASELINE"):
        checkouts["baseline"] = Path(baseline).resolve()
    with tempfile.TemporaryDirectory(prefix="attest-startup-") as scratch:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "attest.settings",
            "DATABASE_URL": f"sqlite:///{scratch}/db.sqlite3",
        }
        env.pop("CACHE_URL", None)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        figures: dict[tuple[str, tuple[str, ...]], list[tuple[float, float]]] = {
            (name, c): [] for c in COMMANDS for name in checkouts
        }
        print(f"load average before: {_load()}")
        for _ in range(rounds):
            for command in COMMANDS:
                for name, cwd in checkouts.items():
                    argv = [sys.executable, "manage.py", *command]
                    figures[(name, command)].append(_timed(argv, cwd, env))
        print(f"load average after:  {_load()}")
        for (name, command), runs in figures.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(
                f"{name:<8} manage.py {' '.join(command):<16} wall {wall:5.2f} s  "
                f"user+sys {cpu:5.2f} s  ({rounds} runs, medians)"
            )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def make_run(label: str, extra_env: dict[str, str]) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="attest-fresh-"))
    clone = scratch / "attest"
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.strip()
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", head], cwd=clone, check=True)
        port = _free_port()
        env = {**os.environ, "PORT": str(port), **extra_env}
        for name in ("DATABASE_URL", "CACHE_URL", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE"):
            env.pop(name, None)
        load_before = _load()
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        seen: dict[str, float] = {}
        server = subprocess.Popen(
            ["make", "run"],
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

        def watch() -> None:
            assert server.stdout is not None
            for line in server.stdout:
                for phase, markers in PHASES:
                    if phase not in seen and any(marker in line for marker in markers):
                        seen[phase] = time.perf_counter() - started

        Thread(target=watch, daemon=True).start()
        url = f"http://127.0.0.1:{port}/healthz"
        try:
            while not _healthy(url):
                if server.poll() is not None:
                    raise RuntimeError(f"make run ended with {server.returncode}")
                if time.perf_counter() - started > 900:
                    raise RuntimeError("no /healthz after 900 s")
                time.sleep(0.2)
            total = time.perf_counter() - started
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # make's and everything it waited for (the venv, the installers, the commands,
        # gunicorn's master and workers), up to the stop: what load inflates least.
        cpu = sum(getattr(cpu_after, f) - getattr(cpu_before, f) for f in ("ru_utime", "ru_stime"))
        marks = [(phase, seen[phase]) for phase, _ in PHASES if phase in seen] + [
            ("healthz 200", total)
        ]
        spans = "  ".join(
            f"{phase} {(marks[i + 1][1] if i + 1 < len(marks) else total) - at:5.1f} s"
            for i, (phase, at) in enumerate(marks[:-1])
        )
        print(
            f"make run, {label}: /healthz 200 after {total:5.1f} s, user+sys {cpu:5.1f} s "
            f"(load {load_before} -> {_load()})"
        )
        print(f"  {spans}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parts = os.environ.get("BENCH_STARTUP_PARTS", "commands,run").split(",")
    if "commands" in parts:
        commands()
    if "run" in parts:
        make_run("pip cache warm", {})
        make_run("no cache", {"PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"})


if __name__ == "__main__":
    main()
