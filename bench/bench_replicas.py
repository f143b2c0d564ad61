"""Resolve and recall throughput on the tested deployment with one streaming replica against
the primary alone.

Needs PostgreSQL (``DATABASE_URL``, whose server is used as the primary; a scratch database
is made beside it and dropped after), Redis (``CACHE_URL``), HAProxy and root (the
replica's postgres runs as the postgres user; see tests/ops/replica.py). Two deployments
of docs/operations.md (tests/ops/topology.py: HAProxy in front of two 2-worker gunicorn
instances with `make run`'s flags and hooks) serve the same database, one whose instances
read from the replica (``DATABASE_REPLICA_URLS``) and one whose instances do not; a
project of ``BENCH_REPLICAS_SUBJECTS`` subjects (100) is ingested and left to replicate,
then rounds of ``BENCH_REPLICAS_REQUESTS`` (400) resolves and recalls, 8 at a time, go
through each balancer in turn (``BENCH_REPLICAS_ROUNDS``, 3). Prints requests per second
per round's median and how many table scans the replica served (its own pg_stat), with
the load average.

``python -m bench replicas``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
SUBJECTS = int(os.environ.get("BENCH_REPLICAS_SUBJECTS", "100"))
REQUESTS = int(os.environ.get("BENCH_REPLICAS_REQUESTS", "400"))
ROUNDS = int(os.environ.get("BENCH_REPLICAS_ROUNDS", "3"))


def _reads(replica, database: str) -> int:
    with replica.connect(database) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0) "
            "FROM pg_stat_user_tables WHERE relname LIKE 'citations_%'"
        ).fetchone()
    return int(row[0])


def main() -> None:
    from tests.live_service import migrate, server_env
    from tests.ops.replica import StreamingReplica, replica_unavailable
    from tests.ops.topology import Topology, makefile_flags

    url = urlsplit(os.environ.get("DATABASE_URL", ""))
    if not url.scheme.startswith("postgres") or not os.environ.get("CACHE_URL", "").startswith(
        "redis"
    ):
        print("needs DATABASE_URL=postgres://... and CACHE_URL=redis://...")
        return
    primary = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": url.hostname or "127.0.0.1",
        "PORT": url.port or 5432,
        "USER": url.username or "postgres",
        "NAME": f"attest_bench_replicas_{os.getpid()}",
    }
    why = replica_unavailable({**primary, "NAME": "postgres"})
    if why:
        print(f"skipped: {why}")
        return
    if shutil.which("haproxy") is None:
        print("skipped: needs HAProxy (Debian's haproxy package)")
        return
    admin = psycopg.connect(
        host=primary["HOST"],
        port=primary["PORT"],
        user=primary["USER"],
        dbname="postgres",
        autocommit=True,
    )
    admin.execute(f"CREATE DATABASE {primary['NAME']}")
    base_url = f"postgres://{primary['USER']}@{primary['HOST']}:{primary['PORT']}/{primary['NAME']}"
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        stack.callback(admin.execute, f"DROP DATABASE IF EXISTS {primary['NAME']} WITH (FORCE)")
        env = server_env(
            DATABASE_URL=base_url,
            CACHE_URL=os.environ["CACHE_URL"],
            SECRET_KEY="bench-replicas-" + "k" * 40,
            ATTEST_VAR_DIR=scratch,
            ATTEST_LEDGER_RATE="1000000/m",
        )
        migrate(env)
        subprocess.run(
            [sys.executable, "manage.py", "ensure_signing_key"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        token = subprocess.run(
            [sys.executable, "manage.py", "create_project", "bench"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
        replica = StreamingReplica(primary).start()
        stack.callback(replica.remove)
        flags = [*makefile_flags("GUNICORN_LIMITS"), *makefile_flags("GUNICORN_HOOKS")]
        shared = {
            "CACHE_URL": env["CACHE_URL"],
            "SECRET_KEY": env["SECRET_KEY"],
            "ATTEST_SIGNING_KEYS": str(Path(scratch) / "signing_keys"),
            "ATTEST_LEDGER_RATE": env["ATTEST_LEDGER_RATE"],
        }
        servers = {}
        for name, reads in (("primary alone", False), ("one replica", True)):
            tmp = Path(tempfile.mkdtemp(dir=scratch))
            deployment = Topology(
                replica=replica,
                tmp=tmp,
                settings=shared,
                gunicorn_flags=flags,
                read_from_replica=reads,
            )
            stack.callback(deployment.stop)
            servers[name] = deployment.start().url
        auth = {"Authorization": f"Bearer {token}"}
        fact_ids = []
        with httpx.Client(timeout=60) as client:
            for n in range(SUBJECTS):
                answer = client.post(
                    f"{servers['primary alone']}/v1/observations",
                    headers=auth,
                    json={
                        "subject": f"user-{n}",
                        "messages": [
                            {
                                "id": f"m{n}",
                                "role": "user",
                                "text": f"I moved to Dublin in March. I work at Acme {n}.",
                                "occurred_at": "2026-03-04T10:11:58Z",
                            }
                        ],
                    },
                )
                fact_ids.append(answer.json()["facts"][0]["id"])
        replica.wait_caught_up()
        time.sleep(1)

        def one(base: str, n: int) -> int:
            with httpx.Client(timeout=60) as client:
                if n % 2:
                    body = {"id": fact_ids[n % len(fact_ids)]}
                    return client.post(
                        f"{base}/v1/citations/resolve", headers=auth, json=body
                    ).status_code
                body = {"subject": f"user-{n % SUBJECTS}"}
                return client.post(f"{base}/v1/recall", headers=auth, json=body).status_code

        rates: dict[str, list[float]] = {name: [] for name in servers}
        served: dict[str, int] = dict.fromkeys(servers, 0)
        for _ in range(ROUNDS):
            for name, base in servers.items():
                before = _reads(replica, primary["NAME"])
                started = time.perf_counter()
                with ThreadPoolExecutor(8) as pool:
                    codes = list(pool.map(lambda n, base=base: one(base, n), range(REQUESTS)))
                rates[name].append(REQUESTS / (time.perf_counter() - started))
                assert set(codes) == {200}, codes
                time.sleep(1.2)
                served[name] += _reads(replica, primary["NAME"]) - before
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        reference = statistics.median(rates["primary alone"])
        for name, values in rates.items():
            median = statistics.median(values)
            print(
                f"{name:<14} {median:7.1f} requests/s (median of {ROUNDS} rounds, "
                f"{median / reference:.2f}x); table scans on the replica: {served[name]}"
            )


if __name__ == "__main__":
    main()
