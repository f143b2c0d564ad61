"""The libxslt reading of a page's text gives exactly what the element-by-element walk gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bench import corpus
from verification.engine import html_text as module
from verification.engine.html_text import html_text, parse_html

# Tags of every kind the walk tells apart, with case and a Kelvin sign thrown in.
TAGS = [
    "p", "div", "span", "em", "a", "li", "ul", "table", "td", "br", "hr", "section",
    "script", "style", "noscript", "template", "svg", "textarea", "select", "title",
    "head", "body", "html", "input", "custom-tag", "o:p", "P", "DiV", "SCRIPT", "x\u0130",
]  # fmt: skip
KELVIN_TAGS = ["lin\u212a", "bloc\u212aquote"]  # rare, since they send a page to the walk
ATTRIBUTES = [
    "", " hidden", ' aria-hidden="true"', ' aria-hidden="false"', ' style="display:none"',
    ' style="color: red; visibility : hidden"', ' style="display: block"', ' type="hidden"',
    ' id="root"', ' HIDDEN', ' style="x;display:none"',
]  # fmt: skip
WORDS = ["word", " ", "\n", "\u00a0", "caf\u00e9", "\u201cq\u201d", "&amp;", "&lt;x&gt;", "\t"]


@st.composite
def markup(draw, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(
            st.sampled_from(
                ["text", "text", "element", "element", "comment", "pi", "close", "cdata"]
            )
        )
        if kind == "text":
            parts.append("".join(draw(st.lists(st.sampled_from(WORDS), max_size=4))))
        elif kind == "comment":
            parts.append(f"<!--{draw(st.sampled_from(WORDS))}-->")
        elif kind == "pi":
            parts.append("<?pi x?>")
        elif kind == "cdata":
            parts.append("<![CDATA[raw]]>")
        elif kind == "close":
            parts.append(f"</{draw(st.sampled_from(TAGS))}>")
        elif depth < 5:
            tag = draw(
                st.sampled_from(TAGS) if draw(st.integers(0, 19)) else st.sampled_from(KELVIN_TAGS)
            )
            attribute = draw(st.sampled_from(ATTRIBUTES))
            inner = draw(markup(depth + 1))
            closed = draw(st.booleans())
            parts.append(f"<{tag}{attribute}>{inner}" + (f"</{tag}>" if closed else ""))
    return "".join(parts)


def both_readings(page: str) -> tuple[tuple[str, str] | None, tuple[str, str]]:
    fast_root, _ = parse_html(page)
    walk_root, _ = parse_html(page)
    if fast_root is None:
        return None, ("", "")
    fast = None if module._needs_walk(fast_root, page) else module._text_by_tree(fast_root)
    return fast, module._walk_text(walk_root)


@settings(deadline=None, max_examples=400)
@given(markup())
def test_the_xslt_reading_equals_the_walk_on_random_markup(page):
    fast, walked = both_readings(page)
    if fast is not None:
        assert fast == walked


@settings(deadline=None, max_examples=100)
@given(markup(), st.sampled_from(ATTRIBUTES))
def test_the_xslt_reading_equals_the_walk_inside_a_full_document(body, attribute):
    page = (
        f"<!doctype html><html><head><title>t</title></head><body{attribute}>{body}</body></html>"
    )
    fast, walked = both_readings(page)
    if fast is not None:
        assert fast == walked


def test_hidden_text_nested_in_hidden_text_is_read_once_in_document_order():
    page = (
        "<body><p>seen</p><div hidden>one<p style='display:none'>two</p>three</div>"
        "<span aria-hidden=true>four<b hidden>five</b></span>after</body>"
    )
    fast, walked = both_readings(page)
    assert fast == walked
    assert fast[1] == "one\ntwo\nthreefourfive"
    assert "seen" in fast[0] and "after" in fast[0] and "one" not in fast[0]


def test_a_kelvin_sign_in_a_tag_name_is_left_to_the_walk():
    page = "<body><lin\u212a>not shown</lin\u212a><p>shown</p></body>"
    root, _ = parse_html(page)
    assert module._needs_walk(root, page)
    assert "not shown" not in html_text(page).text


def test_the_web_page_corpus_reads_the_same_both_ways():
    for size in (20 * 1024, 100 * 1024, 1024 * 1024):
        fast, walked = both_readings(corpus.web_page(size))
        assert fast == walked


def test_a_hidden_root_and_deep_nesting_read_the_same_as_the_walk():
    for page in [
        "<html hidden><body><p>x</p></body></html>",
        "<body>" + "<div>" * 2000 + "deep" + "</div>" * 2000 + "</body>",
        "<body>" + "<span hidden>" * 300 + "h" + "</span>" * 300 + "tail</body>",
    ]:
        assert html_text(page).text == module._walk_text(parse_html(page)[0])[0]
        assert html_text(page).hidden_text == module._walk_text(parse_html(page)[0])[1]
