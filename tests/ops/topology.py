"""The deployment of docs/operations.md, started for a test: HAProxy on loopback in front of
two gunicorn instances (`make run`'s flags and hooks, each its own metrics directory) on
the PostgreSQL primary, a streaming replica of it, and Redis."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.live_service import (
    ROOT,
    STARTUP_SECONDS,
    free_port,
    gunicorn_command,
    server_env,
    start,
    stop,
    wait_answering,
)
from tests.ops.replica import StreamingReplica


def makefile_flags(name: str) -> list[str]:
    """The flags a variable of the Makefile holds (GUNICORN_LIMITS, GUNICORN_HOOKS): the
    instances get what `make run` passes, read from the Makefile itself."""
    text = (ROOT / "Makefile").read_text()
    return shlex.split(re.search(rf"^{name}\s*:?=\s*(.*)$", text, re.M).group(1))


HAPROXY_CONFIG = """\
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 180s
    timeout server 180s
    # Only a connection that failed is sent again (to the other instance): a request an
    # instance may have started is never replayed by the balancer, the client decides.
    retries 2
    option redispatch
frontend attest
    bind 127.0.0.1:{port}
    default_backend instances
backend instances
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
{servers}
"""


class Instance:
    def __init__(self, name: str, env: dict[str, str], tmp: Path, flags: list[str]) -> None:
        self.name, self.port = name, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.metrics_dir = tmp / f"metrics-{name}"
        self.metrics_dir.mkdir()
        self.log = tmp / f"{name}.log"
        self.env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir)}
        command = gunicorn_command(self.port, workers=2, threads=1, extra=["--preload", *flags])
        self.process = start(command, env=self.env, log=self.log)

    def wait(self) -> None:
        wait_answering(self.url, self.process, self.log, STARTUP_SECONDS)

    def kill(self) -> None:
        """kill -9 of the whole instance: its master and every worker at once."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        stop(self.process)


class Topology:
    def __init__(
        self,
        *,
        replica: StreamingReplica,
        tmp: Path,
        settings: dict[str, str],
        gunicorn_flags: list[str],
        read_from_replica: bool = True,
    ) -> None:
        """``read_from_replica=False``: the same deployment with its instances not told of
        the replica (the primary alone serves), for a benchmark's comparison."""
        self.replica, self.tmp = replica, tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        primary = replica.primary
        name = primary["NAME"]
        self.env = server_env(
            DATABASE_URL=f"postgres://{primary['USER']}@127.0.0.1:{primary['PORT'] or 5432}/{name}",
            DATABASE_REPLICA_URLS=replica.url(name) if read_from_replica else "",
            ATTEST_PUBLIC_URL=self.url,
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{self.port}",
            ATTEST_VAR_DIR=str(tmp),
            **settings,
        )
        self.instances = [Instance(n, self.env, tmp, gunicorn_flags) for n in ("a", "b")]
        self.haproxy: subprocess.Popen | None = None

    def start(self) -> Topology:
        for instance in self.instances:
            instance.wait()
        servers = "\n".join(f"    server {i.name} 127.0.0.1:{i.port} check" for i in self.instances)
        config = self.tmp / "haproxy.cfg"
        config.write_text(HAPROXY_CONFIG.format(port=self.port, servers=servers))
        self.haproxy = start(
            [shutil.which("haproxy") or "haproxy", "-db", "-f", str(config)],
            env=dict(os.environ),
            log=self.tmp / "haproxy.log",
        )
        self.wait_both_up()
        return self

    def wait_both_up(self, timeout: float = 60) -> None:
        """Until HAProxy answers several readiness checks in a row (both servers up)."""
        deadline, answered = time.monotonic() + timeout, 0
        while answered < 4:
            try:
                ok = httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200
            except httpx.TransportError:
                ok = False
            answered = answered + 1 if ok else 0
            if time.monotonic() > deadline:
                log = (self.tmp / "haproxy.log").read_text()
                ready = [httpx.get(f"{i.url}/readyz", timeout=5).text for i in self.instances]
                raise RuntimeError(f"HAProxy did not come up: {log[-2000:]} {ready}")
            time.sleep(0.3 if not ok else 0.05)

    def stop(self) -> None:
        if self.haproxy is not None:
            stop(self.haproxy)
        for instance in self.instances:
            instance.stop()
