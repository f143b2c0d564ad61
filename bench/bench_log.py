"""The transparency log at a million leaves: what an append adds to a call, and a proof.

``DATABASE_URL=postgres://… python -m bench log`` (a scratch SQLite file without it)
loads 1,000,000 receipt-sized leaves and their subtree hashes straight into the tables
(COPY on PostgreSQL), then times, through the service functions the routes call:
``log_append_receipt`` (what issue_receipt adds after signing), ``inclusion_proof`` for a
random leaf in the full tree, ``consistency_proof`` from a random older size, and
``GET /v1/log/proof`` through the whole stack (DRF, the unpaid limit, the JSON).
"""

from __future__ import annotations

import io
import os
import random
import statistics
import time

from bench.setup import django_on_a_scratch_database

LEAVES = int(os.environ.get("BENCH_LOG_LEAVES", "1000000"))
ROUNDS = 1000
# A receipt is a few hundred to a few thousand ASCII bytes; the leaf text is stored as is.
LEAF_TEXT = "eyJhbGciOiJFZERTQSJ9." + "x" * 600 + ".sig"


def _load(count: int) -> None:
    """Write ``count`` leaves and every subtree hash they complete, as appends would."""
    from django.db import connection
    from django.utils import timezone

    from attest_core import merkle

    now = timezone.now().isoformat()
    frontier: tuple[bytes, ...] = ()
    leaves, nodes = io.StringIO(), io.StringIO()
    for index in range(count):
        data = f"{LEAF_TEXT}{index}"
        appended = merkle.append_leaf(index, frontier, merkle.leaf_hash(data.encode()))
        frontier = appended.frontier
        leaves.write(f"{index}\treceipt\t\t\\N\t{now}\n")  # a receipt row keeps no text
        for level, position, value in appended.nodes:
            nodes.write(f"{level}\t{position}\t\\\\x{value.hex()}\n")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            raw = cursor.cursor
            with raw.copy(
                'COPY receipts_logleaf ("index", kind, data, audit_project, created_at) FROM STDIN'
            ) as copy:
                copy.write(leaves.getvalue())
            with raw.copy('COPY receipts_lognode (level, "index", hash) FROM STDIN') as copy:
                copy.write(nodes.getvalue())
            cursor.execute("ANALYZE receipts_logleaf; ANALYZE receipts_lognode")
            return
        leaf_rows = [line.split("\t") for line in leaves.getvalue().splitlines()]
        cursor.executemany(
            'INSERT INTO receipts_logleaf ("index", kind, data, audit_project, created_at) '
            "VALUES (%s, %s, %s, NULL, %s)",
            [(int(i), k, d, t) for i, k, d, _, t in leaf_rows],
        )
        node_rows = [line.split("\t") for line in nodes.getvalue().splitlines()]
        cursor.executemany(
            'INSERT INTO receipts_lognode (level, "index", hash) VALUES (%s, %s, %s)',
            [(int(lv), int(i), bytes.fromhex(h[3:])) for lv, i, h in node_rows],
        )


def _durable_write() -> None:
    """What any committed write costs here (the WAL flush at COMMIT): the append's floor."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO bench_log_floor VALUES (1)")


def _timed(call, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _row(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return f"| {name} | {statistics.median(times):.3f} ms | {p99:.3f} ms |"


def main() -> None:
    # The route is timed, not the unpaid limit's refusal after 300 calls a minute.
    os.environ.setdefault("ATTEST_UNPAID_RATE", "100000000/m")
    django_on_a_scratch_database("log", keep_database_url=True)
    from django.db import connection
    from django.test import Client

    from receipts import log

    if log.log_size() == 0:  # a database loaded by an earlier run is used again
        started = time.perf_counter()
        _load(LEAVES)
        took = time.perf_counter() - started
        print(f"{connection.vendor}: loaded {LEAVES:,} leaves in {took:.1f} s")
    assert log.log_size() >= LEAVES
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS bench_log_floor (a integer)")
    rng = random.Random(28)
    counter = iter(range(10**9))
    appends = _timed(lambda: log.log_append_receipt(f"{LEAF_TEXT}new{next(counter)}"), ROUNDS)
    size = log.log_size()
    proofs = _timed(lambda: log.inclusion_proof(index=rng.randrange(size), tree_size=size), ROUNDS)
    consistency = _timed(
        lambda: log.consistency_proof(first=rng.randrange(1, size), second=size), ROUNDS
    )
    floor = _timed(_durable_write, ROUNDS)
    print(f"{ROUNDS} rounds each at {size:,} leaves (median, p99)")
    print("| operation | median | p99 |\n|---|---|---|")
    print(_row("append one receipt (log_append_receipt)", appends))
    print(_row("floor: any durable one-row INSERT and COMMIT", floor))
    print(_row("inclusion proof (service)", proofs))
    print(_row("consistency proof (service)", consistency), flush=True)
    client = Client()

    def routed() -> None:
        response = client.get(f"/v1/log/proof?index={rng.randrange(size)}&tree_size={size}")
        assert response.status_code == 200, response.content

    routes = _timed(routed, ROUNDS)
    print(_row("GET /v1/log/proof (whole stack)", routes))


if __name__ == "__main__":
    main()
