"""Schemathesis against a live Attest on PostgreSQL and Redis, with no way out to the internet.

    .venv/bin/python scripts/fuzz_api.py                 # 25 examples per operation
    .venv/bin/python scripts/fuzz_api.py --examples 100  # a longer run

It re-runs itself in a network and mount namespace of its own (``unshare``, so it needs
root): inside there is only loopback, so no fuzzed URL can reach a real host, and the
resolver is a stub on loopback that answers every name "does not exist" (so a fuzzed URL's
host is ``422 host_not_found``, as a real unknown name would be).
PostgreSQL is the machine's own, reached by its Unix socket, in a throwaway database;
Redis is a throwaway ``redis-server`` inside the namespace. Attest serves under gunicorn
as ``make run`` does, with the public URL and ``ATTEST_FETCH_ALLOW`` set to itself, so
the schema's examples (which verify quotes on the service's own sample page) take the
free-trial path and then the 402 path, as a new caller would. The limits are raised so
the run tests the routes rather than the 429. Every check is on; any failure fails.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import httpx

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MARK = "ATTEST_FUZZ_IN_NAMESPACE"
PG_SOCKET = os.environ.get("ATTEST_FUZZ_PG_SOCKET", "/var/run/postgresql")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(*sql: str) -> None:
    for statement in sql:
        subprocess.run(
            ["psql", "-h", PG_SOCKET, "-U", "postgres", "-d", "postgres", "-qAt", "-c", statement],
            check=True,
            capture_output=True,
        )


def wait_for(url: str, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{what} did not start") from None
            time.sleep(0.2)


def internet_reachable() -> bool:
    """True if anything but loopback answers: the guard that this run cannot leak."""
    try:
        socket.create_connection(("192.0.2.1", 80), timeout=1).close()
    except OSError:
        return False
    return True


def answer_every_name_nxdomain() -> None:
    """A resolver on 127.0.0.1:53 for this namespace: no name exists."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 53))

    def serve() -> None:
        while True:
            data, peer = server.recvfrom(4096)
            try:
                query = dns.message.from_wire(data)
            except dns.exception.DNSException:
                continue
            response = dns.message.make_response(query)
            response.flags |= dns.flags.RA
            response.set_rcode(dns.rcode.NXDOMAIN)
            server.sendto(response.to_wire(), peer)

    threading.Thread(target=serve, daemon=True).start()


ACCESS_LINE = re.compile(r'"([A-Z]+) (\S+) HTTP/[0-9.]+" ([0-9]{3})')


def answers_seen(access_log: str) -> str:
    """What each route answered in the run, from gunicorn's access log."""
    tally: collections.Counter = collections.Counter()
    for method, target, status in ACCESS_LINE.findall(access_log):
        tally[(f"{method} {target.split('?')[0]}", status)] += 1
    lines = ["answers seen (route: status x count):"]
    for route in sorted({route for route, _status in tally}):
        counts = ", ".join(f"{s} x{n}" for (r, s), n in sorted(tally.items()) if r == route)
        lines.append(f"  {route}: {counts}")
    return "\n".join(lines)


# --- REST: text that is not Unicode, on every route (DESIGN.md, API conventions) --------

# Values no route may take: JSON escapes of lone surrogates, and bytes that are not UTF-8.
NOT_UNICODE_VALUES = (
    b'"\\udfff"',
    b'"\\ud800"',
    b'"a\\udc80b"',
    b'"\\ud83d"',  # half an emoji
    b'"caf\xe9"',  # Latin-1
    b'"\xff\xfe"',
    b'"\xed\xa0\x80"',  # a surrogate encoded as if it were UTF-8
    b'"\xc0\xaf"',  # an overlong "/"
)


def _refused_as_invalid_text(response: httpx.Response, field: str | None) -> str | None:
    """Why ``response`` is not the 400 naming ``field`` that text not Unicode must get."""
    if response.status_code != 400:
        return f"status {response.status_code}"
    try:
        error = json.loads(response.content.decode("utf-8"))["error"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return "not a UTF-8 JSON error object"
    if error.get("code") != "invalid_request":
        return f"code {error.get('code')!r}"
    if field is not None and error.get("details", {}).get("field") != field:
        return f"details.field {error.get('details', {}).get('field')!r}, not {field!r}"
    return None


def rest_invalid_text_phase(base: str, token: str) -> int:
    """Send text that is not Unicode to every JSON route of the schema (each declared
    top-level field, a field name, the whole body) and to every query parameter; each must
    be 400 invalid_request naming the field, never a 500. Returns the number of failures."""
    schema = httpx.get(f"{base}/v1/openapi.json", timeout=30).json()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    cases: list[tuple[str, str, bytes | None, str | None]] = []  # method, url, body, field
    for path, item in schema["paths"].items():
        if path == "/mcp":
            continue  # JSON-RPC, not a REST body: fuzz_mcp sends it text that is not Unicode
        url = base + re.sub(r"\{[^}]+\}", "00000000-0000-4000-8000-000000000000", path)
        post = item.get("post", {})
        content = post.get("requestBody", {}).get("content", {}).get("application/json")
        if content is not None:
            ref = content["schema"]["$ref"].rsplit("/", 1)[1]
            for name in schema["components"]["schemas"][ref].get("properties", {}):
                for value in NOT_UNICODE_VALUES:
                    body = b'{"' + name.encode() + b'": ' + value + b"}"
                    cases.append(("POST", url, body, name))
            cases.append(("POST", url, b'{"x\\udfffy": 1}', "x\\udfffy"))
            cases += [("POST", url, value, None) for value in NOT_UNICODE_VALUES]
        for parameter in item.get("get", {}).get("parameters", []):
            if parameter["in"] == "query":
                for raw in ("%ff", "caf%E9", "%ED%A0%80", "%C0%AF"):
                    query = f"?{parameter['name']}={raw}"
                    cases.append(("GET", url + query, None, parameter["name"]))
    failures = 0
    with httpx.Client(timeout=30, headers=headers) as client:
        for method, url, body, field in cases:
            response = client.request(method, url, content=body)
            why = _refused_as_invalid_text(response, field)
            if why is not None:
                failures += 1
                print(f"FAIL {method} {url} {body!r}: {why}")
    print(f"REST text not Unicode: {len(cases)} requests, {failures} failures")
    return failures


def run(examples: int, seed: int | None) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if internet_reachable():
        raise SystemExit("refusing to fuzz: this namespace reaches beyond loopback")
    work = Path(tempfile.mkdtemp(prefix="attest-fuzz-"))
    resolv = work / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    # The mount namespace is private: only this run sees its resolv.conf.
    subprocess.run(["mount", "--bind", str(resolv), "/etc/resolv.conf"], check=True)
    answer_every_name_nxdomain()
    database = f"attest_fuzz_{os.getpid()}_{secrets.token_hex(3)}"
    redis_port, port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "X402_"))}
    env.update(
        DATABASE_URL=f"postgres://postgres@/{database}?host={PG_SOCKET}",
        CACHE_URL=f"redis://127.0.0.1:{redis_port}/0",
        SECRET_KEY=secrets.token_hex(32),
        ATTEST_VAR_DIR=str(work),
        ATTEST_PUBLIC_URL=base,
        ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
        ATTEST_CROSSREF_URL="",
        ATTEST_UNPAID_RATE="100000/m",
        ATTEST_LEDGER_RATE="100000/m",
        ATTEST_FETCH_DEADLINE="5",
        LOG_LEVEL="CRITICAL",
        DEBUG="false",
    )
    psql(f"CREATE DATABASE {database}")
    redis = subprocess.Popen(
        [
            *("redis-server", "--port", str(redis_port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(work)),
        ],
        stdout=subprocess.DEVNULL,
    )
    server = None
    try:

        def manage(*args: str) -> str:
            return subprocess.run(
                [sys.executable, "manage.py", *args],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout

        manage("migrate", "--noinput")
        manage("ensure_signing_key")
        token = manage("create_project", "fuzz").strip().splitlines()[-1].strip()
        server = subprocess.Popen(
            [
                *(str(BIN / "gunicorn"), "attest.wsgi", "--bind", f"127.0.0.1:{port}"),
                *("--workers", "3", "--timeout", "60", "--limit-request-line", "8190"),
                *("--limit-request-field_size", "20480", "--access-logfile", "-"),
            ],
            cwd=ROOT,
            env=env,
            stdout=(work / "server.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        wait_for(f"{base}/healthz", server, "the service")
        command = [str(BIN / "st"), "run", f"{base}/v1/openapi.json"]
        # One worker: schemathesis's threads compile ASTs at once, which CPython 3.11.7 (this
        # machine's) can fail with "AST constructor recursion depth mismatch" (gh-106905).
        command += ["--checks", "all", "--max-examples", str(examples), "--workers", "1"]
        command += ["--header", f"Authorization: Bearer {token}", "--request-timeout", "30"]
        command += [
            "--suppress-health-check",
            "too_slow",
            "--no-color",
            "--output-truncate",
            "true",
        ]
        if seed is not None:
            command += ["--seed", str(seed)]
        started = time.monotonic()
        hooks = {
            "SCHEMATHESIS_HOOKS": "fuzz_hooks",
            "PYTHONPATH": str(ROOT / "scripts"),
            "ATTEST_FUZZ_PAGE": f"{base}/v1/sample/page",
        }
        done = subprocess.run(command, cwd=work, env={**env, **hooks})
        print(f"schemathesis: exit {done.returncode} in {time.monotonic() - started:.0f} s")
        mcp_failures = fuzz_mcp(base, token, seed=seed, cases=examples * 40)
        invalid_text_failures = rest_invalid_text_phase(base, token)
        returncode = done.returncode or (1 if mcp_failures or invalid_text_failures else 0)
        print(answers_seen((work / "server.log").read_text(errors="replace")))
        if returncode != 0:
            log = (work / "server.log").read_text(errors="replace")
            print("--- the service's log (last 4000 characters) ---\n" + log[-4000:])
        return returncode
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        redis.terminate()
        redis.wait(timeout=30)
        psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        shutil.rmtree(work, ignore_errors=True)


# ---- /mcp: JSON-RPC of both MCP eras, well-formed and not ---------------------------------
# Self-contained (schemathesis sees /mcp only as one POST): seeded cases of every shape a
# client of MCP 2026-07-28 or of the handshake era sends, the malformed JSON-RPC a hostile
# caller sends, and tool arguments with lone surrogates, invalid UTF-8 and odd path values.
# Every answer must be JSON-RPC (or a notification's empty 202), and none may be a 5xx.

MCP_TOOLS = (
    *("verify_quote", "verify_quotes", "verify_citations", "fetch_page", "check_receipt"),
    *("ingest_messages", "recall_facts", "resolve_fact", "record_fact", "retract_fact"),
    "list_facts",
)
MCP_ERROR_CODES = {-32700, -32600, -32601, -32602, -32020, -32022}


def _mcp_value(rng, depth: int = 0):
    """A JSON value of any shape, text with lone surrogates and emoji included."""
    texts = ["", "x", "\udfff", "a\ud800b", "\N{GRINNING FACE}", "/", "../..", "%2F", "\x00"]
    choice = rng.randrange(9 if depth < 3 else 6)
    if choice == 0:
        return rng.choice([None, True, False])
    if choice == 1:
        return rng.choice([0, -1, 2**63, 1.5, 1e308])
    if choice in (2, 3, 4, 5):
        return rng.choice(texts) + rng.choice(texts)
    if choice in (6, 7):
        return {
            rng.choice([*texts, "url", "quote", "fact_id", "status", "subject"]): _mcp_value(
                rng, depth + 1
            )
            for _ in range(rng.randrange(4))
        }
    return [_mcp_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _mcp_case(rng, token: str) -> tuple[bytes, dict[str, str]]:
    """One POST body and its headers: a modern or handshake-era request, or garbage."""
    method = rng.choice(
        [
            "tools/call",
            "tools/list",
            "server/discover",
            "initialize",
            "ping",
            "nope",
            "notifications/initialized",
        ]
    )
    params: dict = {}
    if method == "tools/call":
        params = {"name": rng.choice([*MCP_TOOLS, "nope", "\udfff"]), "arguments": _mcp_value(rng)}
        if not isinstance(params["arguments"], dict) and rng.random() < 0.7:
            params["arguments"] = {
                "fact_id": _mcp_value(rng),
                "url": _mcp_value(rng),
                "status": _mcp_value(rng),
            }
    if method == "initialize":
        params = {
            "protocolVersion": rng.choice(["2025-11-25", "2025-06-18", "2025-03-26", "1999-01-01"]),
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        }
    headers = {"Content-Type": "application/json"}
    if rng.random() < 0.5:  # a 2026-07-28 request: _meta envelope and mirrored headers
        version = rng.choice(["2026-07-28", "2026-07-28", "2027-01-01", "2025-11-25"])
        capabilities = rng.choice([{}, {"extensions": {"org.x402/payment": {}}}, "x", None])
        meta = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        if rng.random() < 0.2:
            meta.pop(rng.choice(list(meta)))
        if rng.random() < 0.2:
            meta["traceparent"] = rng.choice(
                ["00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", "\udfff", 7]
            )
        params["_meta"] = meta
        headers["MCP-Protocol-Version"] = rng.choice([version, version, "2026-07-28", "x"])
        headers["Mcp-Method"] = rng.choice([method, method, "tools/list"])
        if "name" in params:
            name = params["name"]
            headers["Mcp-Name"] = rng.choice(
                [name if name.isascii() else "=?base64?eA==?=", "=?base64?!!?=", "other"]
            )
    elif rng.random() < 0.3:
        headers["MCP-Protocol-Version"] = rng.choice(["2025-11-25", "2024-11-05", "9999"])
    if rng.random() < 0.5:
        headers["Authorization"] = f"Bearer {token}"
    message: dict = {
        "jsonrpc": "2.0",
        "id": rng.choice([1, "a", 2**40]),
        "method": method,
        "params": params,
    }
    if method.startswith("notifications/"):
        message.pop("id")
    shape = rng.randrange(12)
    if shape == 0:
        message["id"] = rng.choice([None, 1.5, {}, [], True])
    elif shape == 1:
        message["jsonrpc"] = rng.choice(["1.0", 2, None])
    elif shape == 2:
        message["method"] = rng.choice([["tools/list"], 5, None])
    elif shape == 3:
        message.pop("method")
    elif shape == 4:
        message["params"] = rng.choice([[1], "x", 3])
    body = json.dumps(message).encode()
    garbage = rng.randrange(12)
    if garbage == 0:
        body = rng.choice(
            [
                b"",
                b"{",
                b"[]",
                b"null",
                b'"x"',
                b"42",
                b"\xff\xfe",
                b"[" * 5000,
                json.dumps([message]).encode(),
            ]
        )
    elif garbage == 1:
        body = body.replace(b'"2.0"', b'"2.0\xff"')  # not UTF-8
    return body, headers


def fuzz_mcp(base: str, token: str, *, seed: int | None, cases: int) -> list[str]:
    """Post ``cases`` seeded messages to ``base``/mcp; the failures, each described."""
    import random

    seed = seed if seed is not None else secrets.randbits(64)
    rng = random.Random(seed)
    failures: list[str] = []
    tally: collections.Counter = collections.Counter()
    with httpx.Client(timeout=60, trust_env=False) as http:
        for _ in range(cases):
            body, headers = _mcp_case(rng, token)
            answer = http.post(f"{base}/mcp", content=body, headers=headers)
            tally[answer.status_code] += 1
            problem = _mcp_problem(answer)
            if problem:
                failures.append(f"{problem}: {body[:200]!r} {headers}")
    print(f"/mcp fuzz (seed {seed}): {cases} cases, statuses {dict(sorted(tally.items()))}")
    for failure in failures[:20]:
        print("  /mcp FAILED", failure)
    return failures


def _mcp_problem(answer: httpx.Response) -> str | None:
    if answer.status_code >= 500:
        return f"HTTP {answer.status_code}"
    if answer.status_code == 202:
        return None if not answer.content else "202 with a body"
    try:
        body = answer.json()
    except ValueError:
        return f"HTTP {answer.status_code} is not JSON"
    if (
        not isinstance(body, dict)
        or body.get("jsonrpc") != "2.0"
        or ("result" in body) == ("error" in body)
    ):
        return "not a JSON-RPC response"
    if "error" in body and body["error"].get("code") not in MCP_ERROR_CODES:
        return f"unexpected error code {body['error'].get('code')}"
    if "error" in body and answer.status_code == 200 and body["error"]["code"] in (-32700, -32600):
        return "a malformed message answered 200"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=25, help="examples per operation")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    if os.environ.get(MARK) != "1":
        # Into a namespace with only loopback; the same script runs again in there.
        env = {**os.environ, MARK: "1"}
        command = ["unshare", "--net", "--mount", sys.executable, *sys.argv]
        return subprocess.run(command, env=env).returncode
    return run(args.examples, args.seed)


if __name__ == "__main__":
    sys.exit(main())
