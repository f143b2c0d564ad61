"""``python -m attest_client``: the ``attest`` command."""

from attest_client.cli import main

raise SystemExit(main())
