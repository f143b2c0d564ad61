"""Settings of the server processes billing's crash tests start: the project's, plus the
test URLconf and a route that shows the tests a worker's view of the payment ledger."""

from attest.settings import *  # noqa: F403

ROOT_URLCONF = "tests.billing.server_urls"
