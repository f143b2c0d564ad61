"""Find the DOI a page is about: its meta tags, its URL, or a lone doi.org link."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

# Crossref's recommended pattern for modern DOIs.
_DOI = re.compile(r"\b(10\.\d{4,9}/[-._;()/:a-z0-9]+)", re.I)
_DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org"})
META_KEYS = ("citation_doi", "prism.doi", "dc.identifier", "dcterms.identifier")
# Registered DOIs are far shorter; a longer one is a hostile page's, and it would be
# echoed in the answer, signed into the receipt and sent to Crossref.
MAX_DOI_CHARS = 300


def _clean(candidate: str) -> str | None:
    found = _DOI.search(unquote(candidate))
    if not found:
        return None
    # Trailing punctuation is almost always the sentence's, not the DOI's.
    doi = found.group(1).rstrip(".,;:)").lower()
    return doi if len(doi) <= MAX_DOI_CHARS else None


def find_doi(
    *, url: str, meta: Mapping[str, list[str]] | None = None, links: Iterable[str] = ()
) -> str | None:
    """The page's own DOI, lower-cased, or None.

    A reference list links many DOIs, so a doi.org link counts only when it is
    the only DOI the page links to.
    """
    for key in META_KEYS:
        for value in (meta or {}).get(key, []):
            doi = _clean(value)
            if doi:
                return doi
    parts = urlsplit(url)
    if parts.hostname not in _DOI_HOSTS:
        doi = _clean(parts.path)
        if doi:
            return doi
    else:
        doi = _clean(parts.path.lstrip("/"))
        if doi:
            return doi
    linked = set()
    for href in links:
        try:
            host = urlsplit(href.strip()).hostname
        except ValueError:
            continue
        if host in _DOI_HOSTS:
            doi = _clean(urlsplit(href.strip()).path.lstrip("/"))
            if doi:
                linked.add(doi)
    return linked.pop() if len(linked) == 1 else None
