"""What /docs/how-it-works states, read from the engine: the page verdicts with their advice,
the signals each one can carry, the normalisation shown on real inputs run through the
normaliser, and the matching figures. The docs registry (``attest.docs``) names this page.
"""

from __future__ import annotations

from typing import Any

from attest_core.context import CONTEXT_CHARS
from attest_core.normalise import normalise
from attest_core.passages import MAX_MISSING, MAX_PASSAGES, SCORER
from verification.api.serializers import MatchOptionsInput
from verification.engine.classify import (
    ADVICE,
    BLOCKING_STATUSES,
    CONTENT_KINDS,
    LITTLE_TEXT,
    SIGNAL_ADVICE,
)
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.pipeline.steps import MAX_QUOTE_CHARS, MODES

# The signals a verdict can carry, under the content_kind they come with, and what each says.
# Every name here is one the fetcher or the classifier writes (a docs test holds them to the
# source), and ``status_N`` (the final HTTP status) comes first whenever an answer arrived.
SIGNALS: dict[str, tuple[tuple[str, str], ...]] = {
    "real": (("status_200", "the final answer's HTTP status (any status below 400)"),),
    "http_error": (
        ("status_404", "the final status, 400 or above, with no sign of a bot wall"),
        ("host_not_found", "the host name does not resolve"),
        ("connection_failed", "no connection could be made, or it broke off"),
        ("too_many_redirects", "the redirect chain was longer than we follow"),
    ),
    "bot_wall": (
        ("cf_challenge", "Cloudflare's challenge (its header or its challenge page)"),
        ("aws_waf", "AWS WAF's CAPTCHA or block"),
        ("imperva", "an Imperva (Incapsula) incident page"),
        ("perimeterx", "a PerimeterX (HUMAN) block"),
        ("datadome", "DataDome's protection"),
        ("akamai", "an Akamai access-denied page"),
        ("sucuri", "the Sucuri firewall's page"),
        ("sucuri_block", "Sucuri's block header"),
        ("captcha_widget", "a reCAPTCHA, hCaptcha or Turnstile widget on a page with little text"),
    ),
    "js_shell": (
        ("little_text", f"fewer than {LITTLE_TEXT} visible characters"),
        ("mount_node", "an empty element a script framework renders into"),
        ("noscript_js", "a <noscript> asking for JavaScript"),
        ("scripts", "the page loads scripts"),
    ),
    "empty": (
        ("no_text", "the HTML has no visible text at all"),
        ("no_text_layer", "a PDF with no text layer (a scan)"),
    ),
    "timeout": (
        ("deadline_exceeded", "the whole fetch ran past its deadline"),
        ("pdf_read_timeout", "reading the PDF's text ran past its time"),
    ),
    "too_large": (
        ("body_over_limit", "the decoded body passed the size we read"),
        ("nesting_too_deep", "the HTML nests deeper than the parser goes"),
        ("too_many_elements", "the HTML holds more elements, attributes and comments than we read"),
    ),
    "unsupported": (
        ("content_type", "neither HTML, plain text nor PDF"),
        ("content_encoding", "a compression or character encoding we cannot decode"),
        ("pdf_unreadable", "a PDF that cannot be opened (encrypted or broken)"),
    ),
}
# Signals a readable PDF adds to its status (its kind is real, or empty without text).
PDF_SIGNALS = (
    ("pdf", "the page is a PDF"),
    ("pdf_truncated", "only the first pages were read"),
    ("pdf_pages_skipped", "some pages had no readable text"),
)

# Inputs that show each normalisation step; the page prints what the normaliser makes of them.
NORMALISATION_EXAMPLES = (
    ("a soft hyphen and a zero-width space are dropped", "co\u00adoper\u200bation"),
    ("NFKC: a ligature and a full-width digit", "\ufb01nal \uff12025"),
    ("curly quotes become straight ones", "\u201cit\u2019s\u201d"),
    ("every dash and minus becomes -", "1990\u20132000 \u2014 \u22125"),
    ("whitespace runs become one space, ends are trimmed", "  one\u00a0\ttwo\n\nthree  "),
)


def _shown(text: str) -> str:
    """Text with every character outside printable ASCII written as U+XXXX."""
    return "".join(ch if " " < ch < "\x7f" or ch == " " else f"[U+{ord(ch):04X}]" for ch in text)


def how_it_works() -> dict[str, Any]:
    threshold = MatchOptionsInput().fields["threshold"]
    return {
        "kinds": [
            (
                kind,
                ADVICE[kind],
                SIGNALS[kind],
                [(name, SIGNAL_ADVICE[name]) for name, _ in SIGNALS[kind] if name in SIGNAL_ADVICE],
            )
            for kind in CONTENT_KINDS
        ],
        "pdf_signals": PDF_SIGNALS,
        "blocking_statuses": sorted(BLOCKING_STATUSES),
        "little_text": LITTLE_TEXT,
        "normalisation": [
            (what, _shown(raw), _shown(normalise(raw).text)) for what, raw in NORMALISATION_EXAMPLES
        ],
        "modes": MODES,
        "threshold": threshold,
        "max_quote": f"{MAX_QUOTE_CHARS:,}",
        "context_chars": CONTEXT_CHARS,
        "fuzzy_work": f"{FUZZY_WORK_PER_CALL:,}",
        "scorer": SCORER,
        "max_passages": MAX_PASSAGES,
        "max_missing": MAX_MISSING,
    }
