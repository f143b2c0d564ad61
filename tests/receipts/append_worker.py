"""One process appending receipts to the log, for the concurrent-append test.

Run as ``python -m tests.receipts.append_worker N COUNT`` with DATABASE_URL naming the
test database: it connects, prints ``ready``, waits for a line on stdin (the test's
starting signal, sent to every process at once), appends COUNT receipts named after N,
and prints the indexes it was given as JSON.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    worker, count = int(sys.argv[1]), int(sys.argv[2])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    import django

    django.setup()
    from django.db import connection

    from receipts import log

    connection.ensure_connection()
    print("ready", flush=True)
    sys.stdin.readline()
    logged = {
        log.log_append_receipt(f"receipt-{worker}-{i}"): f"receipt-{worker}-{i}"
        for i in range(count)
    }
    print(json.dumps(logged), flush=True)


if __name__ == "__main__":
    main()
