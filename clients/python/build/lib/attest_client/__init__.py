"""Python client of the Attest API: ``Attest(base_url, payer_key=None, credential=None)``.

One method per route, answers as the API gives them (typed in ``attest_client.types``),
x402 payment through the ``x402`` SDK when a payer key is given, a lost paid answer fetched
again with the same payment, and ``check_receipt`` offline.
"""

from attest_client.check import check_receipt
from attest_client.client import Attest
from attest_client.errors import AttestError

__all__ = ["Attest", "AttestError", "check_receipt"]
