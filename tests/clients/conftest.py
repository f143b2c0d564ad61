"""A real Attest on loopback for the client's tests: gunicorn on its own SQLite file, a
page server, a facilitator that settles on an in-memory chain, and a project credential.

The server's trial is off, so every priced call is paid through the x402 SDK by the
client's payer key; ``landed`` counts the charges the facilitator settled.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from eth_account import Account

from tests.billing.conftest import NETWORK, PAY_TO
from tests.billing.facilitator_server import FacilitatorServer
from tests.live_service import ROOT, gunicorn, migrate, server_env
from tests.verification.conftest import PageServer, page

QUOTE = "nitrate levels in the river fell by eighteen percent"
ARTICLE = (
    "<html><head><title>River report</title></head><body><article>"
    f"<p>Measured over three summers, {QUOTE} after the new treatment plant opened.</p>"
    "<p>The council published the figures in its annual report.</p>"
    "</article></body></html>"
)


@dataclass
class Service:
    url: str
    env: dict[str, str]
    pages: PageServer
    facilitator: FacilitatorServer
    credential: str

    @property
    def article(self) -> str:
        return self.pages.url("/article")


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout


@pytest.fixture(scope="session")
def service(tmp_path_factory) -> Service:
    from receipts.keyring import ensure_key

    tmp: Path = tmp_path_factory.mktemp("client-service")
    keys = str(tmp / "keys")
    ensure_key(keys, now=datetime.now(UTC))
    pages = PageServer().start()
    pages.routes["/article"] = page(ARTICLE)
    robots = "User-agent: *\nDisallow: /private\n"
    pages.routes["/robots.txt"] = page(robots, content_type="text/plain")
    with FacilitatorServer(NETWORK) as facilitator:
        env = server_env(
            DATABASE_URL=f"sqlite:///{tmp / 'server.sqlite3'}",
            SECRET_KEY="client-tests",
            ATTEST_SIGNING_KEYS=keys,
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{pages.port}",
            ATTEST_TRIAL_CALLS_PER_DAY="0",
            ATTEST_UNPAID_RATE="100000/m",
            X402_FACILITATOR_URL=facilitator.url,
            X402_NETWORK=NETWORK,
            X402_PAY_TO=PAY_TO,
        )
        migrate(env)
        credential = _manage(env, "create_project", "client-tests").strip().splitlines()[-1]
        with gunicorn(env, threads=4) as url:
            yield Service(url, env, pages, facilitator, credential)
    pages.server.shutdown()


@pytest.fixture
def payer_key() -> str:
    """A throwaway EVM key: the in-memory chain pays whatever it signs."""
    return Account.create().key.hex()
