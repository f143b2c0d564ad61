"""The receipts guide's offline check (docs/receipts.md) runs as written against a live server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.receipts.samples import PAGE_TEXT, QUOTE, issue_sample

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "receipts.md"


def guide_example() -> str:
    return re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL).group(1)


@pytest.mark.django_db(transaction=True)
def test_the_guides_offline_check_verifies_a_receipt(
    live_server, key_dir, settings, tmp_path, monkeypatch
):
    settings.ATTEST_PUBLIC_URL = live_server.url
    monkeypatch.chdir(tmp_path)
    (tmp_path / "receipt.jws").write_text(issue_sample() + "\n")
    code = guide_example()
    assert 'ATTEST = "http://127.0.0.1:8000"' in code
    code = code.replace('ATTEST = "http://127.0.0.1:8000"', f'ATTEST = "{live_server.url}"')
    # The guide quotes the demo page; this receipt was issued for the sample's own quote.
    code, quoted = re.subn(r'^quote = "[^"]*"', f"quote = {QUOTE!r}", code, flags=re.M)
    assert quoted == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/receipts.md", "exec"), {})
    start = PAGE_TEXT.index(QUOTE)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"exact {start} {start + len(QUOTE)} https://example.org/help real"
    assert lines[1] == "none None None https://example.org/missing http_error"
