"""The text a reader sees on an HTML page, read with lxml, plus the facts around it."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import re
import threading
from collections.abc import Iterable
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


# What a page may hold before it is read: elements, attributes and comments together
# (each costs a few hundred bytes in the tree, whatever its size in the markup). Past
# it the page is ``too_large`` (signal ``too_many_elements``) and never parsed, so a
# dense page under the byte cap cannot take a worker's memory (1.5 M elements took
# 450 MB). Markup shorter than COUNTED_FROM_CHARS cannot hold enough to matter.
MAX_HTML_NODES = 250_000
COUNTED_FROM_CHARS = 256 * 1024
_COUNT_CHUNK_CHARS = 64 * 1024


class _NodeCounter:
    """A parser target that counts what the tree would hold, and stops being fed past the
    budget (no tree is built)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.nodes = budget, 0

    @property
    def over(self) -> bool:
        return self.nodes > self.budget

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.nodes += 1 + len(attrib)

    def comment(self, text: str) -> None:
        self.nodes += 1

    def pi(self, target: str, data: str | None = None) -> None:
        self.nodes += 1

    def close(self) -> int:
        return self.nodes


def too_many_nodes(markup: str, budget: int = MAX_HTML_NODES) -> bool:
    """Whether the page's tree would hold more than ``budget`` elements, attributes and
    comments; read in chunks by libxml2's parser with no tree, stopped once past it."""
    if len(markup) < COUNTED_FROM_CHARS:
        return False
    counter = _NodeCounter(budget)
    parser = etree.HTMLParser(target=counter, **_PARSER_OPTIONS)
    for start in range(0, len(markup), _COUNT_CHUNK_CHARS):
        parser.feed(markup[start : start + _COUNT_CHUNK_CHARS])
        if counter.over:
            break
    with contextlib.suppress(etree.ParserError):  # no markup at all: nothing counted
        parser.close()
    return counter.over


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None)
_MALLOC_TRIM = getattr(_LIBC, "malloc_trim", None)  # glibc only


def give_memory_back() -> None:
    """Hand the heap memory freed by a page's tree back to the system (glibc's
    malloc_trim): without it a worker keeps the peak of the densest page it ever read.
    Other C libraries have no such call; there gunicorn's --max-requests recycles workers."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


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
    too_many_nodes: bool = False  # over MAX_HTML_NODES: never parsed, nothing was read


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
    text: str  # webencodings ships no types
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
_MAYBE_HIDDEN = etree.XPath("//@hidden/.. | //@aria-hidden/.. | //@style/.. | //input")
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
    offsets into it are the same for anyone who reads the page this way. A page over
    MAX_HTML_NODES is not parsed: ``too_many_nodes``, with no text.
    """
    if too_many_nodes(markup):
        return HtmlText(text="", too_many_nodes=True)
    root, truncated = parse_html(markup)
    if root is None:
        return HtmlText(text="")
    result = HtmlText(text="", truncated=truncated)
    _read_facts(root, result)
    if _needs_walk(root, markup):
        result.text, result.hidden_text = _walk_text(root)
        return result
    trees = _text_trees(root)
    if trees is None:
        result.text, result.hidden_text = _walk_text(root)
        return result
    # The page's tree is no longer needed: freed before the text is copied out of the
    # transforms' results (on a 14 MB page each copy is 14 MB more at the peak).
    del root
    result.text, result.hidden_text = trees.read()
    return result


def _read_facts(root: etree._Element, result: HtmlText) -> None:
    """The title, meta tags, links, scripts, noscript text and mount node, into ``result``."""
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


def _needs_walk(root: etree._Element, markup: str) -> bool:
    """Whether the page needs the element-by-element walk rather than _text_by_tree.

    The walk classifies a tag by ``tag.lower()``; libxml2 lowercases ASCII in tag
    names, and the only other character that ``str.lower`` turns into an ASCII letter
    of a listed tag is the Kelvin sign (``<lin\u212a>`` reads as ``link``), which
    lxml's tag filters would not see. A skipped root has no text to cut out of it.
    """
    return "\u212a" in markup or root.tag.lower() in SKIPPED_TAGS


_OURS = "urn:attest:html-text"
_SKIPPED = "|".join(sorted(SKIPPED_TAGS))
_BLOCK = "|".join(sorted(BLOCK_TAGS))
# The walk as XSLT, so that libxslt reads the text rather than Python. Like the walk
# it reads the root element only (libxml2 may leave more elements beside it). Each outermost
# hidden element is renamed into a namespace of our own while the text is read (the
# HTML parser makes no namespaced element, so a page cannot name one so): in the
# visible text a hidden block element leaves only its two line breaks, and the hidden
# text is the renamed elements' contents in document order, without their own breaks.
# Templates match by name only; a predicate would be tried on every element.
_VISIBLE = f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:a="{_OURS}">
  <xsl:output method="text" encoding="UTF-8"/>
  <xsl:template match="/"><xsl:apply-templates select="*[1]"/></xsl:template>
  <xsl:template match="{_SKIPPED}|a:hidden"/>
  <xsl:template match="a:hidden-block"><xsl:text>&#10;&#10;</xsl:text></xsl:template>
  <xsl:template match="{_BLOCK}">
    <xsl:text>&#10;</xsl:text><xsl:apply-templates/><xsl:text>&#10;</xsl:text>
  </xsl:template>
</xsl:stylesheet>"""
_HIDDEN = f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:a="{_OURS}">
  <xsl:output method="text" encoding="UTF-8"/>
  <xsl:template match="/">
    <xsl:for-each select="/*[1]//a:hidden | /*[1]//a:hidden-block">
      <xsl:apply-templates/>
    </xsl:for-each>
  </xsl:template>
  <xsl:template match="{_SKIPPED}"/>
  <xsl:template match="{_BLOCK}">
    <xsl:text>&#10;</xsl:text><xsl:apply-templates/><xsl:text>&#10;</xsl:text>
  </xsl:template>
</xsl:stylesheet>"""
_transforms = threading.local()  # lxml's XSLT objects are not shared between threads


def _transform(name: str, stylesheet: str) -> etree.XSLT:
    transform = getattr(_transforms, name, None)
    if transform is None:
        transform = etree.XSLT(
            etree.XML(stylesheet), access_control=etree.XSLTAccessControl.DENY_ALL
        )
        setattr(_transforms, name, transform)
    return transform


def _text_by_tree(root: etree._Element) -> tuple[str, str] | None:
    """The walk's visible and hidden text, read by libxslt rather than in Python.

    None when the walk must read the page: a hidden root, or a tree libxslt gives up
    on. The outermost hidden elements are renamed while the text is read.
    """
    trees = _text_trees(root)
    return None if trees is None else trees.read()


class _TextTrees:
    """The transforms' results and the root's tail: the text, once read out of them."""

    def __init__(
        self, visible: etree._XSLTResultTree, hidden: etree._XSLTResultTree | None, tail: str
    ) -> None:
        self._visible, self._hidden, self._tail = visible, hidden, tail

    def read(self) -> tuple[str, str]:
        """The visible and hidden text; each result is freed once its bytes are out (one
        copy of the text at a time besides the bytes, where ``str()`` held three)."""
        visible = self._take("_visible").decode("utf-8") + self._tail
        return visible, self._take("_hidden").decode("utf-8")

    def _take(self, name: str) -> bytes:
        result = getattr(self, name)
        setattr(self, name, None)
        return bytes(result) if result is not None else b""


def _text_trees(root: etree._Element) -> _TextTrees | None:
    """The transforms of _text_by_tree, not yet read out (see there)."""
    if _is_hidden(root):
        return None
    outermost = _outermost(element for element in _MAYBE_HIDDEN(root) if _is_hidden(element))
    tags = [element.tag for element in outermost]
    for element, tag in zip(outermost, tags, strict=True):
        hidden_tag = "hidden-block" if tag.lower() in BLOCK_TAGS else "hidden"
        element.tag = f"{{{_OURS}}}{hidden_tag}"
    try:
        visible = _transform("visible", _VISIBLE)(root)
        hidden = _transform("hidden", _HIDDEN)(root) if outermost else None
    except etree.XSLTApplyError:
        return None
    finally:
        for element, tag in zip(outermost, tags, strict=True):
            element.tag = tag
    return _TextTrees(visible, hidden, root.tail or "")


def _outermost(hidden_elements: Iterable[etree._Element]) -> list[etree._Element]:
    """The hidden elements (given in document order) inside no other hidden element
    and neither skipped nor inside a skipped one (the walk never reads those).

    Whether an element lies inside a hidden or skipped one is remembered for every
    element passed on the way up, so the cost stays linear in the size of the tree
    however deep the nesting and however many the hidden elements.
    """
    hidden = [e for e in hidden_elements if e.tag.lower() not in SKIPPED_TAGS]
    hidden_set = set(hidden)
    covered: dict[etree._Element, bool] = {}  # element -> it or an ancestor is hidden
    outermost = []
    for element in hidden:
        path = []
        node = element.getparent()
        inside = False
        while node is not None:
            if node in hidden_set or node.tag.lower() in SKIPPED_TAGS:
                inside = True
                break
            if node in covered:
                inside = covered[node]
                break
            path.append(node)
            node = node.getparent()
        for node in path:
            covered[node] = inside
        if not inside:
            outermost.append(element)
    return outermost


def _walk_text(root: etree._Element) -> tuple[str, str]:
    """Visible and hidden text, element by element (the reference _text_by_tree follows)."""
    visible: list[str] = []
    hidden: list[str] = []
    hidden_elements = {element for element in _MAYBE_HIDDEN(root) if _is_hidden(element)}
    # lxml's walker, not recursion: hostile pages nest deeper than Python's limit. Each
    # open element's entry on ``outer`` is whether the text around it is hidden.
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
    return "".join(visible), "".join(hidden)
