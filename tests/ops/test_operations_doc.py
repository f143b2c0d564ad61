"""docs/operations.md lists every setting the service reads (issue 37), and
docs/configuration.md explains each: a setting added to the code without them fails here."""

from __future__ import annotations

import re

import pytest

from tests.live_service import ROOT

# Where the service reads its environment: settings, their readers, metrics and tracing.
READERS = ("attest/settings.py", "attest/config.py", "attest/metrics.py", "attest/tracing.py")
NAME = re.compile(
    r'"((?:ATTEST|X402|DATABASE|OTEL|LOG)_[A-Z0-9_]+|CACHE_URL|SECRET_KEY|DEBUG|ALLOWED_HOSTS'
    r'|PROMETHEUS_MULTIPROC_DIR)"'
)


def settings_read() -> set[str]:
    return {name for path in READERS for name in NAME.findall((ROOT / path).read_text())}


def test_the_code_reads_settings_this_test_can_see():
    names = settings_read()
    assert {"DATABASE_URL", "ATTEST_METRICS_TOKEN", "DATABASE_REPLICA_URLS"} <= names
    assert len(names) >= 40


@pytest.mark.parametrize("doc", ["docs/operations.md", "docs/configuration.md"])
def test_every_setting_is_named_in_the_doc(doc):
    text = (ROOT / doc).read_text()
    # The SDK's own OTEL_* variables are covered by the doc's `OTEL_*` where not named.
    missing = sorted(
        name
        for name in settings_read()
        if f"`{name}`" not in text and not (name.startswith("OTEL_") and "`OTEL_*`" in text)
    )
    assert not missing, f"{doc} does not name {missing}"
