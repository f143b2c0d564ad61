"""Command line of the offline receipt checker: read what the caller holds, check, print, exit.

Runs without Django and without the service: the receipt, a JWKS (a saved file makes the
whole check offline), and optionally the page texts and the quotes. ``attest check`` and
``python -m receipts.check`` are this command; :func:`check_receipt` is it for Python.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import httpx

from attest_core.check_answer import ReceiptInputError, read_receipt_input
from attest_core.check_findings import EXIT_CODES, FAILURE_KINDS, CheckReport
from attest_core.check_jwks import JwksError, jwks_public_keys
from attest_core.check_log import inclusion_finding
from attest_core.checks import check_offline

JWKS_TIMEOUT_SECONDS = 10.0
JWKS_MAX_BYTES = 1024 * 1024  # a JWKS of a few keys is well under a kilobyte
# Dotted base64url: a receipt given on the command line (a damaged one is judged, not read
# as a file name).
_DOTTED_BASE64URL = re.compile(r"[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]*){2,}")


class UsageError(ValueError):
    """Something given cannot be read; the checker stops with exit status 2."""


def _parser(prog: str) -> argparse.ArgumentParser:
    epilog = "exit status:\n  0  every check given held\n" + "\n".join(
        f"  {kind.exit_code}  {kind.name}: {kind.meaning}" for kind in FAILURE_KINDS
    )
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Check an Attest receipt offline: its signature against a JWKS and, given the "
            "page's normalised text and the quote, its hashes and offsets."
        ),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "receipt",
        metavar="RECEIPT",
        help="a compact JWS, a file holding one or a whole API answer (JSON), or - for stdin",
    )
    parser.add_argument(
        "--jwks",
        required=True,
        metavar="FILE_OR_URL",
        help="the service's JWKS: a saved file (fully offline) or its URL, fetched once",
    )
    parser.add_argument(
        "--text",
        action="append",
        default=[],
        metavar="FILE",
        help="a page's normalised text (UTF-8), e.g. the text of a /v1/fetch answer; repeatable",
    )
    parser.add_argument(
        "--quote",
        action="append",
        default=[],
        metavar="QUOTE",
        help="a quote exactly as it was sent; repeatable",
    )
    parser.add_argument(
        "--head",
        metavar="FILE",
        help="a saved signed tree head (GET /v1/log/head); with --proof, checks that the "
        "receipt is in the transparency log",
    )
    parser.add_argument(
        "--proof",
        metavar="FILE",
        help="the receipt's saved inclusion proof (GET /v1/log/proof at the head's tree_size)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the verdict line")
    return parser


def _read_json_file(path: str) -> Any:
    try:
        return json.loads(_read_text_file(path))
    except (ValueError, RecursionError):
        raise UsageError(f"{path} is not JSON") from None


def _log_inputs(head: str | None, proof: str | None) -> tuple[Any, Any] | None:
    if head is None and proof is None:
        return None
    if head is None or proof is None:
        raise UsageError("--head and --proof go together: the saved head and the proof at its size")
    saved_head, saved_proof = _read_json_file(head), _read_json_file(proof)
    if not isinstance(saved_head, dict) or not isinstance(saved_proof, dict):
        raise UsageError("the saved head and the proof are JSON objects")
    return saved_head, saved_proof


def _read_text_file(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _read_receipt(argument: str, stdin: TextIO) -> tuple[str, dict[str, Any] | None]:
    if argument == "-":
        raw = stdin.read()
    elif _DOTTED_BASE64URL.fullmatch(argument) and not os.path.isfile(argument):
        raw = argument
    else:
        raw = _read_text_file(argument)
    try:
        return read_receipt_input(raw)
    except ReceiptInputError as exc:
        raise UsageError(f"{argument}: {exc}") from None


def _page_text(path: str) -> str:
    # Normalised text never ends in whitespace, so a final newline (which editors and
    # `jq -r` add) cannot belong to it: drop it rather than fail on it.
    text = _read_text_file(path)
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


def _load_jwks(source: str) -> Any:
    if source.startswith(("http://", "https://")):
        try:
            with (
                httpx.Client(timeout=JWKS_TIMEOUT_SECONDS, follow_redirects=True) as client,
                client.stream("GET", source) as response,
            ):
                response.raise_for_status()
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > JWKS_MAX_BYTES:
                        raise UsageError(f"{source}: over {JWKS_MAX_BYTES} bytes, not a JWKS")
        except httpx.HTTPError as exc:
            raise UsageError(f"cannot fetch the JWKS from {source}: {exc}") from None
    else:
        body = _read_text_file(source).encode("utf-8")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise UsageError(f"{source} is not JSON, so not a JWKS") from None


def _public_keys(source: str) -> dict:
    try:
        return jwks_public_keys(_load_jwks(source))
    except JwksError as exc:
        raise UsageError(f"{source}: {exc}") from None


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _span(item: dict[str, Any]) -> str:
    if item.get("start") is None:
        return "no offsets"
    text = f"text[{item['start']}:{item['end']}]"
    if item.get("pdf_page") is not None:
        text += f", PDF page {item['pdf_page']}"
        if item.get("pdf_page_end") not in (None, item["pdf_page"]):
            text += f"-{item['pdf_page_end']}"
    return text


def describe(report: CheckReport) -> list[str]:
    """The signed claims as lines a person reads, pages and results in order."""
    claims = report.claims or {}
    lines = [
        f"Attest receipt signed by key {report.kid} ({(report.header or {}).get('alg')})",
        f"  issuer       {_show(claims.get('iss'))}",
        f"  issued at    {_show(claims.get('issued_at'))}",
        f"  route        {_show(claims.get('route'))}",
        f"  request ID   {_show(claims.get('request_id'))}",
        f"  tier         {_show(claims.get('tier'))}",
    ]
    for index, page in enumerate(claims.get("pages", [])):
        lines += [
            f"page {index}  {page.get('url')}",
            f"  final URL          {_show(page.get('final_url'))}",
            f"  HTTP status        {_show(page.get('http_status'))}",
            f"  content kind       {_show(page.get('content_kind'))}",
            f"  content_sha256     {_show(page.get('content_sha256'))}",
            f"  normalised_sha256  {_show(page.get('normalised_sha256'))}",
            f"  DOI                {_show(page.get('doi'))} (status {_show(page.get('doi_status'))}"
            f", retracted {_show(page.get('retracted'))})",
            f"  evidence           {_show(page.get('evidence'))}",
        ]
    for index, result in enumerate(claims.get("results", [])):
        score = "" if result.get("score") is None else f", score {result['score']}"
        lines += [
            f"result {index}  page {result.get('page')}, mode {result.get('mode')}: "
            f"{result.get('match')}{score}, {_span(result)}",
            f"  quote_sha256  {result.get('quote_sha256')}",
        ]
        if result.get("scorer"):
            lines.append(f"  scorer        {result['scorer']}")
        for number, passage in enumerate(result.get("passages") or ()):
            lines.append(f"  passage {number}     {_span(passage)}, score {passage.get('score')}")
    if claims.get("extra"):
        lines.append(f"extra  {_show(claims['extra'])}")
    return lines


def verdict(report: CheckReport) -> str:
    """The one line that sums the check up: VALID, or INVALID with the first failure."""
    failures = report.failures
    if not failures:
        return "VALID: the signature holds and so does every check the inputs allowed."
    first = failures[0]
    return f"INVALID ({first.kind}: {first.reason}): {first.message}"


def check_receipt(
    receipt: str | Mapping[str, Any],
    *,
    jwks: Mapping[str, Any] | str,
    text: str | Sequence[str] | None = None,
    quote: str | Sequence[str] | None = None,
) -> CheckReport:
    """Check a receipt offline: its signature against ``jwks`` (the JWKS itself, or a file
    or URL holding it) and, given the pages' normalised ``text`` and the ``quote`` as sent,
    its hashes and offsets. ``receipt`` is a compact JWS or a whole API answer (a dict or
    its JSON), whose shown values are then compared with the signed ones.

    ``report.failures`` is empty for a valid receipt; input that cannot be read raises
    ValueError.
    """
    if isinstance(receipt, Mapping):
        receipt = json.dumps(receipt)
    try:
        token, answer = read_receipt_input(receipt)
        keys = jwks_public_keys(jwks if isinstance(jwks, Mapping) else _load_jwks(jwks))
    except (ReceiptInputError, JwksError) as exc:
        raise UsageError(str(exc)) from None
    texts = [text] if isinstance(text, str) else list(text or ())
    quotes = [quote] if isinstance(quote, str) else list(quote or ())
    return check_offline(
        token,
        public_keys=keys,
        texts=[(f"text {number}", page) for number, page in enumerate(texts)],
        quotes=quotes,
        answer=answer,
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stdin: TextIO | None = None,
    prog: str = "python -m receipts.check",
) -> int:
    """Check what the arguments name, print the report, and return the exit status."""
    stdout = stdout or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["monitor"]:
        from attest_client.monitor import main as monitor_main

        return monitor_main(argv[1:], stdout=stdout, prog=f"{prog} monitor")
    arguments = _parser(prog).parse_args(argv)
    try:
        token, answer = _read_receipt(arguments.receipt, stdin or sys.stdin)
        keys = _public_keys(arguments.jwks)
        texts = [(path, _page_text(path)) for path in arguments.text]
        logged = _log_inputs(arguments.head, arguments.proof)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CODES["usage"]
    report = check_offline(
        token, public_keys=keys, texts=texts, quotes=arguments.quote, answer=answer
    )
    if logged is not None:
        head, proof = logged
        report.findings.append(
            inclusion_finding(token, head=head, proof=proof, public_keys=keys, answer=answer)
        )
    if not arguments.quiet:
        if report.claims is not None:
            print("\n".join(describe(report)), file=stdout)
        print("checks", file=stdout)
        for finding in report.findings:
            print(f"  {finding.status.upper():<5} {finding.kind:<9} {finding.message}", file=stdout)
    print(verdict(report), file=stdout)
    return report.exit_code
