"""The ``attest`` command: each API route as a subcommand, and the offline checker.

Reads ``ATTEST_URL`` (the service, default http://127.0.0.1:8000), ``ATTEST_PAYER_KEY`` (a
hex EVM private key: priced calls are paid with it) and ``ATTEST_CREDENTIAL`` (a project's
bearer credential, for the ledger; priced calls are paid from its prepaid credit). Answers
are JSON on stdout; errors go to stderr as the API's error object. Subcommands are rows
of ``COMMANDS``; ``attest mcp`` serves the service's MCP tools over stdio
(attest_client.mcp_stdio).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attest_client.errors import AttestError

if TYPE_CHECKING:
    from attest_client.client import Attest

DEFAULT_URL = "http://127.0.0.1:8000"
EXIT_ANSWER = 0
EXIT_REFUSED = 1  # the service answered with an error object (4xx, 5xx)
EXIT_USAGE = 2  # bad arguments or an input file that cannot be read
EXIT_NO_ANSWER = 3  # no answer at all: the service unreachable, or a payment not made
EPILOG = f"""environment:
  ATTEST_URL        the service (default {DEFAULT_URL})
  ATTEST_PAYER_KEY  hex EVM private key: priced calls past the trial are paid with it
  ATTEST_CREDENTIAL bearer credential of a project: the fact ledger's commands need it,
                    and priced calls are paid from its prepaid credit (attest credits)

exit status (every command but check):
  {EXIT_ANSWER}  the service answered (JSON on stdout)
  {EXIT_REFUSED}  the service refused: its error object on stderr
  {EXIT_USAGE}  bad arguments or an unreadable input
  {EXIT_NO_ANSWER}  no answer: the service unreachable, or the payment could not be made
attest check exits 0 for a valid receipt and 1-9 for the first failure (attest check -h);
attest monitor exits 9 when a tree head is not consistent with one seen before.
"""


class UsageError(Exception):
    pass


def _read_json(path: str) -> Any:
    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def _match_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--match", choices=["fuzzy", "exact", "passages"])
    parser.add_argument("--case-sensitive", action="store_true", default=None)
    parser.add_argument("--threshold", type=float)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {"match": args.match, "case_sensitive": args.case_sensitive, "threshold": args.threshold}


def _citations(args: argparse.Namespace) -> list[dict]:
    data = _read_json(args.file)
    citations = data.get("citations") if isinstance(data, dict) else data
    if not isinstance(citations, list):
        raise UsageError(f'{args.file}: give a list of {{url, quote}} or {{"citations": [...]}}')
    return citations


def _receipt_text(value: str) -> str:
    return _read_text(value) if os.path.isfile(value) else value


def _ingest(client: Attest, args: argparse.Namespace) -> Any:
    data = _read_json(args.file)
    if not isinstance(data, dict):
        raise UsageError(f"{args.file}: give {{subject, messages}}")
    return client.ingest(data.get("subject", args.subject), data.get("messages", []))


@dataclass(frozen=True)
class Command:
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Attest, argparse.Namespace], Any]


def _args(*specs: tuple[tuple[str, ...], dict[str, Any]]) -> Callable:
    def add(parser: argparse.ArgumentParser) -> None:
        for names, options in specs:
            parser.add_argument(*names, **options)

    return add


def _with_match(*specs: tuple[tuple[str, ...], dict[str, Any]]) -> Callable:
    def add(parser: argparse.ArgumentParser) -> None:
        _args(*specs)(parser)
        _match_options(parser)

    return add


def _credits(client: Attest, args: argparse.Namespace) -> Any:
    if args.top_up:
        return client.buy_credits(args.top_up)
    return client.credits(after=args.after, limit=args.limit)


COMMANDS: dict[str, Command] = {
    "credits": Command(
        "prepaid credit: the balance (GET /v1/credits), or --top-up AMOUNT US dollars bought "
        "with ATTEST_PAYER_KEY (POST /v1/credits; without ATTEST_CREDENTIAL, a new project)",
        _args(
            (("--top-up",), {"metavar": "AMOUNT"}),
            (("--after",), {}),
            (("--limit",), {"type": int}),
        ),
        _credits,
    ),
    "verify-quote": Command(
        "is QUOTE on the page at URL? (POST /v1/verify/quote)",
        _with_match((("url",), {"metavar": "URL"}), (("quote",), {"metavar": "QUOTE"})),
        lambda c, a: c.verify_quote(a.url, a.quote, **_options(a)),
    ),
    "verify-quotes": Command(
        "several quotes on one page (POST /v1/verify/quotes)",
        _with_match(
            (("url",), {"metavar": "URL"}), (("quotes",), {"metavar": "QUOTE", "nargs": "+"})
        ),
        lambda c, a: c.verify_quotes(a.url, a.quotes, **_options(a)),
    ),
    "verify-citations": Command(
        "a list of {url, quote} from FILE.json, or - for stdin (POST /v1/verify/citations)",
        _with_match((("file",), {"metavar": "FILE.json"})),
        lambda c, a: c.verify_citations(_citations(a), **_options(a)),
    ),
    "fetch": Command(
        "the page's normalised text (POST /v1/fetch)",
        _args((("url",), {"metavar": "URL"})),
        lambda c, a: c.fetch(a.url),
    ),
    "receipt-verify": Command(
        "the service checks a receipt (POST /v1/receipt/verify); attest check does it offline",
        _args(
            (("receipt",), {"metavar": "RECEIPT", "help": "a compact JWS, or a file holding one"}),
            (("--text",), {"metavar": "FILE"}),
            (("--quote",), {}),
            (("--page",), {"type": int}),
        ),
        lambda c, a: c.receipt_verify(
            _receipt_text(a.receipt).strip(),
            text=None if a.text is None else _read_text(a.text),
            quote=a.quote,
            page=a.page,
        ),
    ),
    "jwks": Command("the service's signing keys", _args(), lambda c, a: c.jwks()),
    "sample": Command("a free signed sample answer", _args(), lambda c, a: c.sample_quote()),
    "ingest": Command(
        "store messages from FILE.json {subject, messages} (POST /v1/observations)",
        _args((("file",), {"metavar": "FILE.json"}), (("--subject",), {})),
        _ingest,
    ),
    "recall": Command(
        "a subject's facts (POST /v1/recall); --query ranks them by relevance to a question",
        _args(
            (("subject",), {}),
            (("--predicate",), {}),
            (("--query",), {}),
            (("--valid-at",), {}),
            (("--known-at",), {}),
            (("--limit",), {"type": int}),
        ),
        lambda c, a: c.recall(
            a.subject,
            predicate=a.predicate,
            query=a.query,
            valid_at=a.valid_at,
            known_at=a.known_at,
            limit=a.limit,
        ),
    ),
    "resolve": Command(
        "a fact with its evidence and versions (POST /v1/citations/resolve)",
        _args((("fact_id",), {"metavar": "FACT_ID"})),
        lambda c, a: c.resolve(a.fact_id),
    ),
    "facts": Command(
        "the project's facts (GET /v1/facts)",
        _args(
            (("--subject",), {}),
            (("--predicate",), {}),
            (("--status",), {}),
            (("--limit",), {"type": int}),
            (("--after",), {}),
        ),
        lambda c, a: c.facts(
            subject=a.subject, predicate=a.predicate, status=a.status, limit=a.limit, after=a.after
        ),
    ),
    "changes": Command(
        "what changed, in commit order (POST /v1/changes); --after takes the last next.cursor",
        _args((("--subject",), {}), (("--limit",), {"type": int}), (("--after",), {})),
        lambda c, a: c.changes(subject=a.subject, limit=a.limit, after=a.after),
    ),
    "subjects": Command(
        "the project's subjects (GET /v1/subjects)",
        _args((("--limit",), {"type": int}), (("--after",), {})),
        lambda c, a: c.subjects(limit=a.limit, after=a.after),
    ),
    "record-fact": Command(
        "state a fact (POST /v1/facts)",
        _args(
            (("subject",), {}),
            (("predicate",), {}),
            (("statement",), {}),
            (("--value",), {}),
            (("--valid-from",), {}),
        ),
        lambda c, a: c.record_fact(
            a.subject, a.predicate, a.statement, value=a.value, valid_from=a.valid_from
        ),
    ),
    "retract": Command(
        "withdraw a fact (POST /v1/facts/{id}/retract)",
        _args((("fact_id",), {"metavar": "FACT_ID"}), (("reason",), {"metavar": "REASON"})),
        lambda c, a: c.retract(a.fact_id, a.reason),
    ),
    "rebuild": Command(
        "read stored messages again (POST /v1/rebuilds): --subject and --message-id, or --project",
        _args(
            (("--subject",), {}),
            (("--message-id",), {}),
            (("--project",), {"action": "store_true"}),
        ),
        lambda c, a: c.rebuild(subject=a.subject, message_id=a.message_id, project=a.project),
    ),
    "rebuild-status": Command(
        "follow a rebuild (GET /v1/rebuilds/{id})",
        _args((("generation_id",), {"type": int, "metavar": "ID"})),
        lambda c, a: c.rebuild_status(a.generation_id),
    ),
    "erase": Command(
        "erase a message or a whole subject (POST /v1/erasures)",
        _args((("subject",), {}), (("--message-id",), {})),
        lambda c, a: c.erase(a.subject, a.message_id),
    ),
}
# Streamed: one JSON line a record, printed as it arrives.
STREAMED: dict[str, Command] = {
    "export": Command(
        "everything about a subject, NDJSON (GET /v1/subjects/{subject}/export)",
        _args((("subject",), {})),
        lambda c, a: c.export(a.subject),
    ),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attest",
        description="Call the Attest API, or check a receipt offline.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--url", dest="service_url", default=None, help="the service (default: $ATTEST_URL)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "mcp",
        help="serve the service's MCP tools over stdio, forwarded to $ATTEST_URL/mcp",
        description="Serve Attest's MCP tools over stdio for a local MCP client, each "
        "JSON-RPC message forwarded to the service's /mcp as it came (any MCP revision the "
        "service speaks); ATTEST_PAYER_KEY pays priced tools' x402 offers with the x402 SDK, "
        "ATTEST_CREDENTIAL is sent as Authorization: Bearer (the ledger's tools).",
    )
    commands.add_parser(
        "check",
        help="check a receipt offline (attest check RECEIPT --jwks FILE_OR_URL; -h for more)",
        add_help=False,
    )
    commands.add_parser(
        "monitor",
        help="follow the transparency log, report an inconsistent head (attest monitor -h)",
        add_help=False,
    )
    for name, command in {**COMMANDS, **STREAMED}.items():
        command.arguments(commands.add_parser(name, help=command.help, description=command.help))
    return parser


def _client(args: argparse.Namespace) -> Attest:
    from attest_client.client import Attest  # with the checker: not loaded for `attest mcp`

    return Attest(
        args.service_url or os.environ.get("ATTEST_URL") or DEFAULT_URL,
        payer_key=os.environ.get("ATTEST_PAYER_KEY") or None,
        credential=os.environ.get("ATTEST_CREDENTIAL") or None,
    )


def _fail(exc: AttestError) -> int:
    print(json.dumps(exc.to_dict(), ensure_ascii=False), file=sys.stderr)
    return EXIT_REFUSED if exc.status is not None else EXIT_NO_ANSWER


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `attest check` is the offline checker, whose own parser takes the rest.
    if argv[:1] == ["check"]:
        from attest_client import check

        return check.main(argv[1:], prog="attest check")
    if argv[:1] == ["monitor"]:
        from attest_client import monitor

        return monitor.main(argv[1:], prog="attest monitor")
    args = _parser().parse_args(argv)
    if args.command == "mcp":
        from attest_client import mcp_stdio

        return mcp_stdio.run(
            args.service_url or os.environ.get("ATTEST_URL") or DEFAULT_URL,
            credential=os.environ.get("ATTEST_CREDENTIAL") or None,
            payer_key=os.environ.get("ATTEST_PAYER_KEY") or None,
        )
    try:
        with _client(args) as client:
            if args.command in STREAMED:
                for item in STREAMED[args.command].run(client, args):
                    print(json.dumps(item, ensure_ascii=False), flush=True)
                return EXIT_ANSWER
            answer = COMMANDS[args.command].run(client, args)
    except UsageError as exc:
        print(f"attest {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # an argument the client rejects before any call
        print(f"attest {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AttestError as exc:
        return _fail(exc)
    print(json.dumps(answer, ensure_ascii=False, indent=2))
    return EXIT_ANSWER
