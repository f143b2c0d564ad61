"""Schemathesis hooks for scripts/fuzz_api.py: the few refusals a JSON schema cannot state.

Every check stays on. A "schema-valid request rejected" failure (ST202) is set aside only
when the answer is one of the documented refusals below, each a rule about a value's
meaning that no OpenAPI 3.0 keyword can express. Anything else, and every other kind of
failure, fails the run.
"""

from __future__ import annotations

import json
import os
import re
import zlib

import schemathesis

# The service's own sample page (scripts/fuzz_api.py sets it, with ATTEST_FETCH_ALLOW):
# half the URLs of a shape the schema allows are pointed at it, so the run sees real
# pages, the free trial and then the 402, and not only hosts that do not exist.
PAGE = os.environ.get("ATTEST_FUZZ_PAGE", "")
URL_SHAPE = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://\S+")

# Codes a request the schema allows may get whatever its shape: the page's host does not
# exist (the fuzz resolver says so of every name) or is an address never fetched, and a
# priced route asks for payment (a payment header is any string to the schema).
BY_CODE = {"host_not_found", "blocked", "payment_required"}

# (code, words of the message) of refusals about a value's meaning.
BY_MESSAGE = [
    # A quote's limit counts characters after normalisation.
    ("invalid_request", "after normalisation"),
    # A passages claim must carry a word with meaning.
    ("invalid_request", "only common words"),
    # Message IDs are unique by one property, which uniqueItems cannot say.
    ("invalid_request", "must be unique within a request"),
    # A message cannot have been sent after it was received.
    ("invalid_request", "in the future"),
    # A date-time's offset past every zone's, or its year past 9999 in UTC.
    ("invalid_request", "offset must be between"),
    ("invalid_citation", "offset must be between"),
    ("invalid_request", "years 1 to 9999 in UTC"),
    # One option that depends on another, which OpenAPI 3.0 cannot say.
    ("invalid_request", 'must be false with "match": "passages"'),
    # A ranked recall (with query) pages 100 facts at most; a plain one 200.
    ("invalid_request", "With query, at most 100."),
    # A page cursor is signed: only one the service made is accepted.
    ("invalid_citation", "after must be the next value"),
    ("invalid_request", "after must be the next value"),
    # An authored record names its author or is backed by web evidence (one of the two).
    ("invalid_request", "Say who states the record, or back it with"),
    # A piece of evidence is a message's (message_id) or the web's (receipt), one of the two.
    ("invalid_request", "(web evidence), one of the two"),
    # A statement is the value unless a value is given: then the value's limit is its.
    ("invalid_request", "characters once case-folded"),
    # One field's value bounded by another's (an interval's end after its start).
    ("invalid_request", "come after valid_from"),
    # Which of subject, message_id and scope a rebuild needs depends on the others.
    ("invalid_request", "A project rebuild takes no subject or message ID"),
    ("invalid_request", "A source rebuild needs both"),
    # A predicate must be one the project knows (built-in or declared): state, not shape.
    ("invalid_request", "is neither a built-in predicate nor one this project declared"),
    # statement may be left out only when evidence quotes a message (it is then the quote).
    ("invalid_request", "unless `evidence` quotes a message"),
    # extracted_by names the extractor of message evidence, so it needs some.
    ("invalid_request", "Only with message evidence"),
    # A dotted-quad host must be a real IPv4 address (no octet over 255).
    ("invalid_request", "looks like an IPv4 address but is not a valid one"),
    # The transparency log's sizes are bounded by its head (state), and one parameter by
    # another (an index below the size, first not past second).
    ("invalid_request", "is past the log's head"),
    ("invalid_request", "is not below tree_size"),
    ("invalid_request", "is past second"),
]


def _error(response) -> dict:
    try:
        body = json.loads(response.content)
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


# Web evidence on an authored record is refused unless its receipt is one this service
# signed and vouches for the quote: a signature and a hash, which no schema can state.
WEB_EVIDENCE_REASONS = {"receipt_invalid", "quote_mismatch", "no_match", "page_not_real"}


def documented_refusal(response) -> bool:
    error = _error(response)
    code, message = error.get("code"), str(error.get("message", ""))
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    if code == "invalid_request" and details.get("reason") in WEB_EVIDENCE_REASONS:
        return True
    return code in BY_CODE or any(code == c and words in message for c, words in BY_MESSAGE)


@schemathesis.hook
def filter_failure(ctx, failure, case, response) -> bool:
    return not (failure.code == "ST202" and documented_refusal(response))


def _to_page(value, salt: int):
    if isinstance(value, dict):
        return {k: _to_page(v, salt) if k != "url" else _url(v, salt) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_page(item, salt + index) for index, item in enumerate(value)]
    return value


def _url(value, salt: int):
    # Only a URL the schema allows (shape and length): a negative case stays negative.
    if (
        isinstance(value, str)
        and len(value) <= 2048
        and URL_SHAPE.fullmatch(value)
        and salt % 2 == 0
    ):
        return PAGE
    return value


@schemathesis.hook
def map_body(ctx, body):
    if not PAGE or not isinstance(body, dict):
        return body
    return _to_page(body, zlib.crc32(json.dumps(body, sort_keys=True, default=str).encode()))


@schemathesis.hook
def before_add_examples(ctx, examples) -> None:
    # The schema's examples name public pages; offline, they name the sample page.
    if not PAGE:
        return
    for case in examples:
        if isinstance(case.body, dict):
            case.body = _to_page(case.body, 0)
