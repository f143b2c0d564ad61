"""Run the offline receipt checker."""

from receipts.check.cli import main

raise SystemExit(main())
