"""Find the DOI a cited page is about: a doi.org link, its meta tags, or its URL path."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

# Crossref's recommended pattern for modern DOIs.
_DOI = re.compile(r"\b(10\.\d{4,9}/[-._;()/:a-z0-9]+)", re.I)
DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org"})
META_KEYS = (
    "citation_doi",
    "bepress_citation_doi",
    "prism.doi",
    "dc.identifier",
    "dcterms.identifier",
)
# Registered DOIs are far shorter; a longer one is a hostile page's, and it would be
# echoed in the answer, signed into the receipt and sent to Crossref.
MAX_DOI_CHARS = 300

SOURCE_URL = "url"  # the cited link: a doi.org link it went through, or a DOI in its path
SOURCE_PAGE = "page"  # the page's own meta tag


@dataclass(frozen=True)
class FoundDoi:
    doi: str  # lower-cased: DOIs are case-insensitive
    source: str  # SOURCE_URL or SOURCE_PAGE


def clean_doi(candidate: str) -> str | None:
    """The DOI in a string (a bare DOI, ``doi:…``, a URL or path), lower-cased, or None."""
    found = _DOI.search(unquote(candidate))
    if not found:
        return None
    # Trailing punctuation is almost always the sentence's (or the URL's), not the DOI's.
    doi = found.group(1).rstrip(".,;:)/").lower()
    if len(doi) > MAX_DOI_CHARS:
        return None
    # No registered DOI has an empty, "." or ".." segment; one that did would walk up
    # the path of the Crossref request it is put into.
    if any(segment in {"", ".", ".."} for segment in doi.split("/")[1:]):
        return None
    return doi


# What publishers put after a DOI in their article URLs: a view of the work (its full
# text, abstract, PDF reader, figures...), never part of the DOI. A DOI read from a
# URL path loses these, so the lookup asks Crossref for the work itself.
_VIEW_SEGMENTS = frozenset(
    {
        "abs", "abstract", "article-info", "citedby", "cited-by", "comments", "download",
        "epdf", "epub", "figures", "full", "full-text", "fulltext", "html", "info", "meta",
        "metrics", "pdf", "pdfdirect", "pdfft", "pdfplus", "reader", "references", "suppl",
        "supplemental", "supplementary", "suppinfo", "summary", "tables", "text", "toc",
        "view",
    }
)  # fmt: skip
# A file name's extension (``view.html``, ``main.pdf``, ``x.full.pdf``).
_FILE_EXTENSION = re.compile(r"\.(?:pdf|html?|xml|epub|php|aspx?|jsp)$", re.I)
# What some append to the DOI's own last segment (``…0001.full``, ``…v1.abstract``).
_VIEW_SUFFIX = re.compile(r"\.(?:full|abstract|summary|fulltext)$", re.I)


def _without_view(doi: str) -> str:
    """``doi`` without the view segments and file names a publisher's path appends."""
    prefix, *segments = doi.split("/")
    while True:
        last = segments[-1]
        if len(segments) > 1 and (last in _VIEW_SEGMENTS or _FILE_EXTENSION.search(last)):
            segments.pop()  # a page of the work, or a file, after the DOI
            continue
        shorter = _VIEW_SUFFIX.sub("", _FILE_EXTENSION.sub("", last))
        if shorter == last or not shorter:
            return "/".join([prefix, *segments])
        segments[-1] = shorter


def doi_in_path(url: str) -> str | None:
    """The DOI in a URL's path (``/doi/10.5555/x/full`` names ``10.5555/x``), or None."""
    doi = clean_doi(_path(url))
    return _without_view(doi) if doi else None


def _host(url: str) -> str | None:
    try:
        return urlsplit(url.strip()).hostname
    except ValueError:
        return None


def _path(url: str) -> str:
    try:
        return urlsplit(url.strip()).path
    except ValueError:
        return ""


def doi_named_by_link(url: str) -> str | None:
    """The DOI a cited link names whatever its page says: a doi.org link's.

    ``find_doi`` puts such a link first, so the DOI is known before the page is
    fetched and its lookup can run while the page is on its way.
    """
    if _host(url) in DOI_HOSTS:
        return clean_doi(_path(url).lstrip("/"))
    return None


def find_doi(
    *,
    requested_url: str,
    redirects: Iterable[str] = (),
    final_url: str | None = None,
    meta: Mapping[str, list[str]] | None = None,
) -> FoundDoi | None:
    """The DOI the cited page is about, in the order the citations seed gives, or None.

    1. A doi.org link: the cited URL itself, or any URL its redirects went through
       (a short link to doi.org, dx.doi.org to doi.org), or where they ended.
    2. The page's own meta tag (``citation_doi`` and the like).
    3. A DOI in the path of the cited URL, then of the final URL, without what the
       publisher appends after it (``/full``, ``/pdf``, ``/view.html``, ``.full``...).

    Links in the page's body never count: a blog post or a reference list links
    other papers, and their DOIs are not the page's.
    """
    chain = [requested_url, *redirects, *([final_url] if final_url else [])]
    url: str | None  # the last loop's may be None
    for url in chain:
        doi = doi_named_by_link(url)
        if doi:
            return FoundDoi(doi, SOURCE_URL)
    for key in META_KEYS:
        for value in (meta or {}).get(key, []):
            doi = clean_doi(value)
            if doi:
                return FoundDoi(doi, SOURCE_PAGE)
    for url in (requested_url, final_url):
        if url:
            doi = doi_in_path(url)
            if doi:
                return FoundDoi(doi, SOURCE_URL)
    return None
