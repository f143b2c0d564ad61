"""Decide what a fetched page is: real content, an error, a bot wall, a JavaScript shell."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

CONTENT_KINDS = (
    "real",
    "http_error",
    "bot_wall",
    "js_shell",
    "empty",
    "timeout",
    "too_large",
    "unsupported",
)

ADVICE = {
    "real": "The page loaded and looks like real content.",
    "http_error": (
        "The server answered with an error instead of the page; check the URL or try later."
    ),
    "bot_wall": (
        "A bot-protection challenge answered instead of the page, so a missing quote "
        "says nothing about the page itself."
    ),
    "js_shell": (
        "The page builds its text with JavaScript, which we do not run, so a missing "
        "quote may still be on the page a browser shows."
    ),
    "empty": "The page loaded but has no readable text.",
    "timeout": "The page did not finish loading in time; try again later.",
    "too_large": "The page is larger than we read, so it was not checked.",
    "unsupported": "The page is not HTML, plain text or a readable PDF, so it was not checked.",
}

# An http_error no server answered: its advice says what happened instead. The first of
# a page's signals found here wins over its kind's advice.
SIGNAL_ADVICE = {
    "host_not_found": (
        "The host name does not resolve, so no server was asked for the page; check the "
        "URL's spelling."
    ),
    "connection_failed": (
        "No connection to the server could be made, or it broke off before an answer; "
        "check the URL or try later."
    ),
    "too_many_redirects": (
        "The server kept redirecting past the number of redirects we follow, so no page "
        "was reached; check the URL."
    ),
}


def advice_for(content_kind: str, signals: list[str]) -> str:
    """The one sentence of advice for a page of this kind with these signals."""
    for signal in signals:
        if signal in SIGNAL_ADVICE:
            return SIGNAL_ADVICE[signal]
    return ADVICE[content_kind]


# How much of the body start is searched for vendor markers.
BODY_START = 32 * 1024
# Below this many visible characters a page is "little text".
LITTLE_TEXT = 400
BLOCKING_STATUSES = frozenset({401, 403, 405, 429, 503})

# Response headers only bot-protection vendors set on a challenge or a block. A
# Content-Security-Policy naming a vendor's script host proves nothing and is never read.
_HEADER_SIGNALS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("cf-mitigated", re.compile(r"challenge", re.I), "cf_challenge"),
    ("x-amzn-waf-action", re.compile(r"captcha|challenge|block", re.I), "aws_waf"),
    ("x-sucuri-block", re.compile(r"."), "sucuri_block"),
    ("x-datadome", re.compile(r"protected", re.I), "datadome"),
    ("x-px-block", re.compile(r"."), "perimeterx"),
)
# Markers in the body of a vendor's challenge or block page.
_BODY_SIGNALS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"/cdn-cgi/challenge-platform/|window\._cf_chl_opt|cf-browser-verification|"
            r"<title>\s*just a moment\.\.\.\s*</title>|cf-challenge-running",
            re.I,
        ),
        "cf_challenge",
    ),
    (re.compile(r"awswafintegration|awswafcookiedomainlist|gokuprops", re.I), "aws_waf"),
    (re.compile(r"_incapsula_resource|incapsula incident id", re.I), "imperva"),
    (re.compile(r"_pxappid|px-captcha|_pxcaptcha|perimeterx", re.I), "perimeterx"),
    (re.compile(r"captcha-delivery\.com|datadome", re.I), "datadome"),
    (
        re.compile(
            r"errors\.edgesuite\.net|access denied.{0,400}reference\s*&?#?\s*[0-9a-f]+\.",
            re.I | re.S,
        ),
        "akamai",
    ),
    (re.compile(r"sucuri website firewall|sucuri\.net/privacy-policy", re.I), "sucuri"),
)
_CAPTCHA = re.compile(
    r"class=[\"'][^\"']*\b(?:g-recaptcha|h-captcha|cf-turnstile)\b|"
    r"google\.com/recaptcha/api\.js|hcaptcha\.com/1/api\.js|challenges\.cloudflare\.com/turnstile",
    re.I,
)
_NOSCRIPT_PLEA = re.compile(
    r"(enable|turn on|activate|requires?|need)\W+(?:\w+\W+){0,4}javascript"
    r"|javascript\W+(?:\w+\W+){0,3}(required|disabled|enabled)",
    re.I,
)


@dataclass
class Verdict:
    content_kind: str
    signals: list[str] = field(default_factory=list)

    @property
    def advice(self) -> str:
        return advice_for(self.content_kind, self.signals)


def header_signals(headers: Mapping[str, str]) -> list[str]:
    """Bot-challenge signals from the vendors' own response headers."""
    signals: list[str] = []
    for name, pattern, signal in _HEADER_SIGNALS:
        value = headers.get(name)
        if value is not None and pattern.search(value) and signal not in signals:
            signals.append(signal)
    return signals


def body_signals(body_start: str) -> list[str]:
    """Bot-challenge markers in the start of the body, and CAPTCHA widgets."""
    head = body_start[:BODY_START]
    signals = [signal for pattern, signal in _BODY_SIGNALS if pattern.search(head)]
    if _CAPTCHA.search(head):
        signals.append("captcha_widget")
    return list(dict.fromkeys(signals))


def js_shell_signals(
    *, visible_chars: int, scripts: int, mount_node: bool, noscript_text: str
) -> list[str]:
    """Why a page looks like it builds its content in the browser (empty unless it does)."""
    if visible_chars >= LITTLE_TEXT:
        return []
    signals = []
    if mount_node:
        signals.append("mount_node")
    if _NOSCRIPT_PLEA.search(noscript_text):
        signals.append("noscript_js")
    if scripts:
        signals.append("scripts")
    # Scripts alone are common on tiny real pages; a mount node or a plea is needed too.
    if not ({"mount_node", "noscript_js"} & set(signals)) or not scripts:
        return []
    return ["little_text", *signals]


def classify_html(
    *,
    status: int,
    headers: Mapping[str, str],
    body_start: str,
    visible_chars: int,
    scripts: int,
    mount_node: bool,
    noscript_text: str,
) -> Verdict:
    """The verdict for an HTML (or text) answer that arrived whole."""
    from_headers = header_signals(headers)
    blocking = status in BLOCKING_STATUSES
    # Body markers only count on a blocking status or a short page, so a long page
    # is not searched for them at all.
    from_body = body_signals(body_start) if blocking or visible_chars < LITTLE_TEXT * 4 else []
    # A header is the vendor saying so. A body marker on a page full of text is more
    # likely a widget on a real page (a comment form's CAPTCHA), so it counts on a
    # blocking status or a page with little text.
    markers = [s for s in from_body if s != "captcha_widget"]
    walled = (
        bool(from_headers)
        or (bool(from_body) and (blocking or visible_chars < LITTLE_TEXT))
        or (bool(markers) and visible_chars < LITTLE_TEXT * 4)
    )
    if walled:
        signals = list(dict.fromkeys([*from_headers, *from_body]))
        return Verdict("bot_wall", [f"status_{status}", *signals])
    if status >= 400:
        return Verdict("http_error", [f"status_{status}"])
    shell = js_shell_signals(
        visible_chars=visible_chars,
        scripts=scripts,
        mount_node=mount_node,
        noscript_text=noscript_text,
    )
    if shell:
        return Verdict("js_shell", [f"status_{status}", *shell])
    if visible_chars == 0:
        return Verdict("empty", [f"status_{status}", "no_text"])
    return Verdict("real", [f"status_{status}"])
