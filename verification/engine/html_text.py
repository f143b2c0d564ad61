"""The text a reader sees on an HTML page, read with lxml, plus the facts around it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import webencodings
from lxml import etree

# Never rendered as text.
SKIPPED_TAGS = frozenset(
    {"script", "style", "template", "noscript", "head", "title", "meta", "link", "base"}
    | {"iframe", "object", "embed", "svg", "math", "canvas", "select", "datalist", "textarea"}
)
# Separated from their neighbours by a line break when read.
BLOCK_TAGS = frozenset(
    {"address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details"}
    | {"dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "li", "main", "nav"}
    | {"ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th"}
    | {"thead", "tr", "ul", "option", "legend", "menu", "html"}
)
MOUNT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app"})
_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
# huge_tree lifts libxml2's default nesting limit of 256 to 2,048 (and its text-node cap).
# Past 2,048 open elements libxml2 stops reading, so the rest of the page is lost; the
# limit stays because without it a page of unclosed tags followed by stray end tags
# costs time quadratic in its depth. A cut is reported (``truncated``), never hidden.
_PARSER_OPTIONS = {"huge_tree": True, "remove_comments": False, "no_network": True}
_RESOURCE_LIMIT = getattr(etree.ErrorTypes, "ERR_RESOURCE_LIMIT", None)


def _stopped_early(log: etree._ListErrorLog) -> bool:
    return any(error.type == _RESOURCE_LIMIT or "Excessive depth" in error.message for error in log)


# The title is echoed in every answer; a hostile page must not make that answer huge.
MAX_TITLE_CHARS = 1000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


@dataclass
class HtmlText:
    text: str  # visible text, blocks separated by "\n"; not yet normalised
    title: str = ""
    hidden_text: str = ""  # text a reader does not see but an agent reading the source might
    meta: dict[str, list[str]] = field(default_factory=dict)  # name/property (lower) -> contents
    links: list[str] = field(default_factory=list)
    scripts: int = 0
    mount_node: bool = False
    noscript_text: str = ""
    truncated: bool = False  # the parser stopped at a limit: text after that point is missing


_UTF8 = webencodings.lookup("utf-8")
# The Standard decodes GBK with its GB18030 decoder; Python's gbk codec lacks GB18030's
# four-byte sequences, which GBK-labelled pages use for characters outside GBK.
_DECODED_AS = {"gbk": webencodings.lookup("gb18030")}
# What a <meta> declaration may not mean (HTML's prescan, "get an encoding"): a tag read
# as ASCII cannot be UTF-16, and x-user-defined is a script-only encoding.
_META_MEANS = {
    "utf-16be": _UTF8,
    "utf-16le": _UTF8,
    "x-user-defined": webencodings.lookup("windows-1252"),
}


def web_encoding(label: str | None) -> webencodings.Encoding | None:
    """The WHATWG Encoding Standard's encoding for a label, or None if it names none."""
    encoding = webencodings.lookup(label) if label else None
    return _DECODED_AS.get(encoding.name, encoding) if encoding is not None else None


def decode_html(body: bytes, header_charset: str | None = None) -> str:
    """Decode an HTML body as a browser does: BOM, Content-Type charset, <meta charset>, UTF-8.

    Labels are read with the WHATWG Encoding Standard's table (``webencodings``), so
    ``latin1`` is windows-1252 and ``x-sjis`` is Shift_JIS; a label that names no web
    encoding (``hex``, ``utf-7``) is ignored as a browser ignores it.
    """
    encoding = web_encoding(header_charset)
    if encoding is None:
        found = _META_CHARSET.search(body[:4096])
        encoding = web_encoding(found.group(1).decode("ascii")) if found else None
        if encoding is not None:
            encoding = _META_MEANS.get(encoding.name, encoding)
    # A byte-order mark outranks every label.
    text, _ = webencodings.decode(body, encoding or _UTF8, errors="replace")
    return text


def _is_hidden(element: etree._Element) -> bool:
    if element.get("hidden") is not None:
        return True
    if (element.get("aria-hidden") or "").strip().lower() == "true":
        return True
    if element.tag == "input" and (element.get("type") or "").lower() == "hidden":
        return True
    return bool(_HIDDEN_STYLE.search(element.get("style") or ""))


# Elements _is_hidden may call hidden: the walk asks only about these.
_MAYBE_HIDDEN = etree.XPath("//*[@hidden or @aria-hidden or @style or self::input]")
# An element's text as lxml.html's text_content() reads it (descendant text nodes).
_TEXT_CONTENT = etree.XPath("string()", smart_strings=False)


def parse_html(markup: str) -> tuple[etree._Element | None, bool]:
    """The document's root element (None if there is no document), and whether the
    parser stopped at a limit before the end."""
    # A browser's tree builder ignores U+0000 in text; libxml2 would make it U+FFFD.
    markup = _XML_DECLARATION.sub("", markup, count=1).replace("\x00", "")
    if not markup.strip():
        return None, False
    # A parser per page: its error log then belongs to this page alone. Plain etree
    # elements: lxml.html's element classes cost a Python call for every element touched.
    parser = etree.HTMLParser(**_PARSER_OPTIONS)
    try:
        root = etree.fromstring(markup, parser=parser)
    except (etree.ParserError, ValueError):
        return None, False
    if root is None:
        return None, False
    return root, _stopped_early(parser.error_log)


def html_text(markup: str) -> HtmlText:
    """Visible text of a page in document order, with the hidden text kept apart.

    The whole visible text is read, not a guess at the main article, so
    offsets into it are the same for anyone who reads the page this way.
    """
    root, truncated = parse_html(markup)
    if root is None:
        return HtmlText(text="")
    visible: list[str] = []
    hidden: list[str] = []
    result = HtmlText(text="", truncated=truncated)

    title = root.find(".//title")
    if title is not None:
        result.title = _cut(" ".join(_TEXT_CONTENT(title).split()), MAX_TITLE_CHARS)
    for meta in root.iter("meta"):
        key = (meta.get("name") or meta.get("property") or "").strip().lower()
        if key and meta.get("content") is not None:
            result.meta.setdefault(key, []).append(meta.get("content").strip())
    result.links = [a.get("href", "") for a in root.iter("a") if a.get("href")]
    result.scripts = sum(1 for _ in root.iter("script"))
    result.noscript_text = " ".join(
        " ".join(_TEXT_CONTENT(n).split()) for n in root.iter("noscript")
    )
    for element in root.iter("div", "main", "section", "body"):
        is_mount = (element.get("id") or "").lower() in MOUNT_IDS or element.get(
            "ng-app"
        ) is not None
        if is_mount and not _TEXT_CONTENT(element).strip():
            result.mount_node = True
            break

    # lxml's walker, not recursion: hostile pages nest deeper than Python's limit. Each
    # open element's entry on ``outer`` is whether the text around it is hidden.
    hidden_elements = {element for element in _MAYBE_HIDDEN(root) if _is_hidden(element)}
    outer: list[bool] = []
    in_hidden = False
    walker = etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    for event, element in walker:
        if event == "start":
            tag = element.tag.lower()
            outer.append(in_hidden)
            if tag in SKIPPED_TAGS:
                walker.skip_subtree()  # its "end" still comes, with the tail
                continue
            if tag in BLOCK_TAGS:
                (hidden if in_hidden else visible).append("\n")
            in_hidden = in_hidden or element in hidden_elements
            if element.text:
                (hidden if in_hidden else visible).append(element.text)
        elif event == "end":
            in_hidden = outer.pop()
            out = hidden if in_hidden else visible
            if element.tag.lower() in BLOCK_TAGS:
                out.append("\n")
            if element.tail:
                out.append(element.tail)
        elif element.tail:  # a comment or processing instruction: its tail is still text
            (hidden if in_hidden else visible).append(element.tail)
    result.text = "".join(visible)
    result.hidden_text = "".join(hidden)
    return result
