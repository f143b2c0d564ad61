"""Run the offline receipt checker."""

from attest_client.check import main

raise SystemExit(main())
