"""The MCP tests run against the client tests' real Attest on loopback (gunicorn, a page
server, a facilitator settling on an in-memory chain; the trial off, so every priced call
is paid), reached by the official MCP SDK's client over HTTP and over stdio."""

from tests.clients.conftest import payer_key, service  # noqa: F401  (fixtures)
