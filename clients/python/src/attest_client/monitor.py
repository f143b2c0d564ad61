"""Follow a service's transparency log: keep the heads seen, report one that forks from them.

``attest monitor`` and ``python -m receipts.check monitor``: each poll fetches the signed
head, checks its signature against the JWKS, asks for the RFC 9162 consistency proof from
the largest head kept before and verifies it here. A consistent head is kept in the state
file; one that is not (the log was rewritten, or shows different trees to different
people) is reported, kept apart as evidence, and ends the command with exit status 9.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import httpx

from attest_core.check_findings import EXIT_CODES
from attest_core.check_jwks import JwksError, jwks_public_keys
from attest_core.check_log import heads_consistent
from attest_core.tree_head import TreeHead, TreeHeadRefused, check_tree_head

TIMEOUT_SECONDS = 10.0


class MonitorError(Exception):
    """The service could not be asked, or answered with something that is not a log."""


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Follow an Attest transparency log and report any inconsistent tree head.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("ATTEST_URL"),
        required=not os.environ.get("ATTEST_URL"),
        help="the service's base URL (default: $ATTEST_URL)",
    )
    parser.add_argument(
        "--state", required=True, metavar="FILE", help="where the heads seen are kept (JSON)"
    )
    parser.add_argument(
        "--jwks", metavar="FILE_OR_URL", help="the JWKS; default the service's, fetched each poll"
    )
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between polls")
    parser.add_argument("--once", action="store_true", help="poll once and exit")
    return parser


def _load_state(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"heads": [], "inconsistent": []}
    try:
        state = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise MonitorError(f"cannot read the state file {path}: {exc}") from None
    if not isinstance(state, dict) or not isinstance(state.get("heads"), list):
        raise MonitorError(f"{path} is not a monitor state file")
    state.setdefault("inconsistent", [])
    return state


def _get(http: httpx.Client, url: str, params: dict | None = None) -> Any:
    try:
        response = http.get(url, params=params)
    except httpx.HTTPError as exc:
        raise MonitorError(f"cannot reach {url}: {exc}") from None
    if response.status_code != 200:
        raise MonitorError(f"{url} answered {response.status_code}: {response.text[:200]}")
    try:
        return response.json()
    except ValueError:
        raise MonitorError(f"{url} did not answer JSON") from None


def _keys(http: httpx.Client, base: str, jwks: str | None) -> dict:
    try:
        if jwks is None or jwks.startswith(("http://", "https://")):
            document = _get(http, jwks or f"{base}/.well-known/jwks.json")
        else:
            document = json.loads(Path(jwks).read_text("utf-8"))
        return jwks_public_keys(document)
    except (OSError, ValueError, JwksError) as exc:
        raise MonitorError(f"cannot use the JWKS: {exc}") from None


def poll(
    base_url: str, state_path: Path, *, jwks: str | None = None, http: httpx.Client
) -> tuple[bool, str]:
    """One poll: (consistent, a line saying what was found). The state file is updated."""
    base = base_url.rstrip("/")
    state = _load_state(state_path)
    keys = _keys(http, base, jwks)
    head = _get(http, f"{base}/v1/log/head")
    try:
        new = check_tree_head(head, public_keys=keys)
    except TreeHeadRefused as exc:
        raise MonitorError(f"the service's tree head does not check out: {exc}") from None
    kept = [_parsed(saved, keys) for saved in state["heads"]]
    largest = max(kept, key=lambda pair: pair[0].tree_size, default=None)
    consistent, line = True, f"tree head of {new.tree_size} leaves: the first one kept"
    if largest is not None:
        consistent, line = _compare(http, base, largest[0], new)
        if not consistent:
            state["inconsistent"].append({"head": head, "against": largest[1], "found": line})
    if consistent and all(old.tree_size != new.tree_size for old, _ in kept):
        state["heads"].append(head)
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True), "utf-8")
    return consistent, line


def _parsed(saved: Any, keys: dict) -> tuple[TreeHead, Any]:
    try:
        return check_tree_head(saved, public_keys=keys), saved
    except (TreeHeadRefused, AttributeError) as exc:
        raise MonitorError(f"a head in the state file does not check out: {exc}") from None


def _compare(http: httpx.Client, base: str, old: TreeHead, new: TreeHead) -> tuple[bool, str]:
    older, newer = (old, new) if old.tree_size <= new.tree_size else (new, old)
    if older.tree_size == newer.tree_size:
        same = older.root_hash == newer.root_hash
        return same, (
            f"tree head of {new.tree_size} leaves: unchanged"
            if same
            else f"INCONSISTENT: two heads of {new.tree_size} leaves with different roots"
        )
    proof = _get(
        http,
        f"{base}/v1/log/consistency",
        {"first": older.tree_size, "second": newer.tree_size},
    ).get("proof")
    if isinstance(proof, list) and heads_consistent(older, newer, proof):
        return True, (
            f"tree head of {new.tree_size} leaves: consistent with the one of "
            f"{old.tree_size} seen before"
        )
    return False, (
        f"INCONSISTENT: the head of {new.tree_size} leaves does not extend the head of "
        f"{old.tree_size} seen before (the log was rewritten or forked)"
    )


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, prog: str = "monitor"
) -> int:
    """Poll (once, or every --interval seconds); exit 9 on an inconsistent head."""
    stdout = stdout or sys.stdout
    arguments = _parser(prog).parse_args(argv)
    with httpx.Client(timeout=TIMEOUT_SECONDS) as http:
        while True:
            try:
                consistent, line = poll(
                    arguments.url, Path(arguments.state), jwks=arguments.jwks, http=http
                )
            except MonitorError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return EXIT_CODES["usage"]
            print(line, file=stdout, flush=True)
            if not consistent:
                return EXIT_CODES["log"]
            if arguments.once:
                return 0
            time.sleep(arguments.interval)
