"""What the offline checker reports: each check's finding, and the exit status per failure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class FailureKind:
    """What failed, and the exit status that says so."""

    name: str
    exit_code: int
    meaning: str


# The checker's exit status names what failed first; 0 means every check given held.
FAILURE_KINDS: tuple[FailureKind, ...] = (
    FailureKind(
        "signature",
        1,
        "The receipt is not intact: not a compact JWS, not an Attest receipt, or its "
        "signature does not match its header and payload.",
    ),
    FailureKind(
        "usage",
        2,
        "The checker could not run: a file it cannot read, a JWKS it cannot use, a bad option.",
    ),
    FailureKind(
        "key",
        3,
        "The receipt names no key, a key the JWKS does not hold, or an algorithm other than EdDSA.",
    ),
    FailureKind(
        "payload",
        4,
        "The signature holds but the signed claims are not a receipt this checker reads "
        "(malformed, or a newer payload version).",
    ),
    FailureKind(
        "text",
        5,
        "A text given is not the normalised text of any page the receipt signs.",
    ),
    FailureKind(
        "offsets",
        6,
        "A signed span lies outside its page's text, or what it holds is not what the "
        "receipt says about the quote.",
    ),
    FailureKind("quote", 7, "A quote given is not one the receipt signs."),
    FailureKind(
        "answer",
        8,
        "The API answer around the receipt says something the receipt does not sign.",
    ),
    FailureKind(
        "log",
        9,
        "The receipt is not in the transparency log under the saved signed head, or (monitor) "
        "a tree head is not consistent with one seen before.",
    ),
)
EXIT_CODES = {kind.name: kind.exit_code for kind in FAILURE_KINDS}

Status = Literal["ok", "fail", "skip"]


@dataclass(frozen=True)
class Finding:
    """One check: what it was about, whether it held (``skip``: not checkable with what was
    given), and a sentence saying so."""

    status: Status
    kind: str
    reason: str
    message: str


@dataclass
class CheckReport:
    """Everything one run found: the verified header and claims (None if refused) and checks."""

    kid: str | None
    header: dict[str, Any] | None
    claims: dict[str, Any] | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.status == "fail"]

    @property
    def exit_code(self) -> int:
        failures = self.failures
        return EXIT_CODES[failures[0].kind] if failures else 0


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def span_inside(start: Any, end: Any, length: int) -> bool:
    """Both offsets absent, or integers with 0 <= start <= end <= length."""
    if start is None and end is None:
        return True
    return isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= length


def excerpt(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
