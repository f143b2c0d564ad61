"""The transparency log at a million leaves: what an append adds to a call, and a proof.

``DATABASE_URL=postgres://… python -m bench log`` (a scratch SQLite file without it)
loads 1,000,000 receipt-sized leaves and their subtree hashes straight into the tables
(COPY on PostgreSQL), then times, through the service functions the routes call:

- what the append adds to a call, interleaved round by round: the call's own durable
  write as ``Recording.answered`` makes it (``log_append_receipt`` and
  ``verification_record`` in one transaction), the record alone as a call with nothing
  to log would write it (one INSERT in autocommit), and the path before the append
  shared the record's transaction (the append committed alone, then the record);
- ``log_append_receipt`` standalone (its own COMMIT), and the floor any durable write
  pays (a one-row INSERT and its COMMIT);
- ``inclusion_proof`` for a random leaf in the full tree, ``consistency_proof`` from a
  random older size, and ``GET /v1/log/proof`` through the whole stack (DRF, the unpaid
  limit, the JSON).

The machine's load average is printed with the figures.
"""

from __future__ import annotations

import io
import os
import random
import statistics
import time

from bench.setup import django_on_a_scratch_database

LEAVES = int(os.environ.get("BENCH_LOG_LEAVES", "1000000"))
STATEMENTS = "the append's statements inside the call's transaction (no commit of their own)"
ROUNDS = int(os.environ.get("BENCH_LOG_ROUNDS", "1000"))
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


def _p99(times: list[float]) -> float:
    return sorted(times)[int(len(times) * 0.99) - 1]


def _row(name: str, times: list[float]) -> str:
    return f"| {name} | {statistics.median(times):.3f} ms | {_p99(times):.3f} ms |"


def _load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _call_writes(rounds: int) -> dict[str, list[float]]:
    """The call's own durable write with and without the append, interleaved.

    Each round runs the three variants once, in an order that rotates, so a burst of
    load on the machine falls on all three alike.
    """
    from django.db import transaction

    from receipts import log
    from verification.pipeline.records import verification_record
    from verification.pipeline.steps import Timings

    counter = iter(range(10**9))

    def record() -> None:
        n = next(counter)
        verification_record(
            route="verify/quote",
            request_id=f"bench-{n}",
            tier="trial",
            mode="fuzzy",
            url="https://example.org/report",
            timings=Timings(),
            result={"match": "exact"},
        )

    statements: list[float] = []

    def with_append() -> None:  # as Recording.answered runs it now
        with transaction.atomic():
            started = time.perf_counter()
            log.log_append_receipt(f"{LEAF_TEXT}call{next(counter)}")
            statements.append((time.perf_counter() - started) * 1000)
            record()

    def without_append() -> None:  # the record as a call with no receipt to log writes it
        record()

    def append_apart() -> None:  # before: the append's own commit, then the record's
        log.log_append_receipt(f"{LEAF_TEXT}apart{next(counter)}")
        record()

    variants = {
        "record + append, one transaction (now)": with_append,
        "record alone, autocommit (no log)": without_append,
        "append committed apart, then record (before)": append_apart,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for round_ in range(rounds):
        for name in names[round_ % 3 :] + names[: round_ % 3]:
            started = time.perf_counter()
            variants[name]()
            times[name].append((time.perf_counter() - started) * 1000)
    times[STATEMENTS] = statements
    return times


# The frontier read as it was before the levels were chosen ahead of the join (it probed
# the node index at all 63 levels), timed beside the one the log runs now.
_FRONTIER_BEFORE = """
WITH size AS (SELECT coalesce(max("index") + 1, 0) AS n FROM receipts_logleaf)
SELECT size.n, node.level, node.hash FROM size LEFT JOIN LATERAL (
    SELECT level, hash FROM generate_series(0, 62) AS l
    JOIN receipts_lognode ON level = l AND "index" = (size.n >> l) - 1
    WHERE (size.n >> l) & 1 = 1
) AS node ON true
"""


def _frontier_reads(rounds: int) -> dict[str, list[float]]:
    """The append's first statement, before and now, interleaved (PostgreSQL only)."""
    from django.db import connection

    from receipts import log

    queries = {"frontier read before": _FRONTIER_BEFORE, "frontier read now": log._PG_FRONTIER}
    times: dict[str, list[float]] = {name: [] for name in queries}
    with connection.cursor() as cursor:
        for round_ in range(rounds):
            for name in sorted(queries, reverse=bool(round_ % 2)):
                started = time.perf_counter()
                cursor.execute(queries[name])
                cursor.fetchall()
                times[name].append((time.perf_counter() - started) * 1000)
    return times


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
    print(f"load average before: {_load_average()}", flush=True)
    calls = _call_writes(ROUNDS)
    statements = calls.pop(STATEMENTS)
    counter = iter(range(10**9))
    appends = _timed(lambda: log.log_append_receipt(f"{LEAF_TEXT}new{next(counter)}"), ROUNDS)
    floor = _timed(_durable_write, ROUNDS)
    size = log.log_size()
    proofs = _timed(lambda: log.inclusion_proof(index=rng.randrange(size), tree_size=size), ROUNDS)
    consistency = _timed(
        lambda: log.consistency_proof(first=rng.randrange(1, size), second=size), ROUNDS
    )
    client = Client()

    def routed() -> None:
        response = client.get(f"/v1/log/proof?index={rng.randrange(size)}&tree_size={size}")
        assert response.status_code == 200, response.content

    routes = _timed(routed, ROUNDS)
    print(f"{connection.vendor}, {ROUNDS} rounds each at {size:,} leaves (median, p99)")
    print("| operation | median | p99 |\n|---|---|---|")
    for name, times in calls.items():
        print(_row(f"a call's durable write: {name}", times))
    now, alone = (
        calls["record + append, one transaction (now)"],
        calls["record alone, autocommit (no log)"],
    )
    before = calls["append committed apart, then record (before)"]
    added = [a - b for a, b in zip(now, alone, strict=True)]
    print(_row("what the append adds to a call now (paired difference)", added))
    print(
        _row(
            "what it added before (paired difference)",
            [a - b for a, b in zip(before, alone, strict=True)],
        )
    )
    print(_row(STATEMENTS, statements))
    print(_row("append one receipt standalone (log_append_receipt, own COMMIT)", appends))
    if connection.vendor == "postgresql":
        for name, times in _frontier_reads(ROUNDS).items():
            print(_row(name, times))
    print(_row("floor: any durable one-row INSERT and COMMIT", floor))
    print(_row("inclusion proof (service)", proofs))
    print(_row("consistency proof (service)", consistency))
    print(_row("GET /v1/log/proof (whole stack)", routes))
    print(
        f"added to a call, difference of medians: "
        f"{statistics.median(now) - statistics.median(alone):.3f} ms now, "
        f"{statistics.median(before) - statistics.median(alone):.3f} ms before"
    )
    print(f"load average after: {_load_average()}", flush=True)


if __name__ == "__main__":
    main()
