"""Read Crossref's REST answers into the ``crossref`` block a cited page carries.

Crossref wraps every answer in an envelope, ``{"status": "ok", "message-type":
"work", "message": {...}}`` for ``/works/{doi}`` and ``"work-list"`` (with
``message.items``) for ``/works?filter=…``. A work lists the notices that
update it in ``updated-by`` (from the publisher or from Retraction Watch, in
``source``); a notice lists what it updates in ``update-to``. Both are read
here, together with the list of works whose ``update-to`` names the DOI, the
cross-check that catches a notice the work's own record does not list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Notices that withdraw the work itself. A correction, an expression of concern or a
# partial retraction is listed in ``updates`` but leaves ``retracted`` false.
RETRACTING_TYPES = frozenset({"retraction", "withdrawal", "removal"})
MAX_AUTHORS = 10
# Bounds on what a (possibly broken or hostile) answer can put into ours and the cache.
MAX_NOTICES = 50
MAX_TEXT_CHARS = 1000


class NotCrossrefAnswer(ValueError):
    """The body is not the envelope Crossref answers with."""


@dataclass(frozen=True)
class Notice:
    """One update notice: its type (retraction, correction, ...), DOI, source and date."""

    type: str
    doi: str
    source: str | None
    date: str | None  # ISO 8601, as precise as Crossref gives it: 2010-02-06, 2010-02, 2010

    def as_json(self) -> dict[str, Any]:
        return {"type": self.type, "doi": self.doi, "source": self.source, "date": self.date}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Notice:
        return cls(type=data["type"], doi=data["doi"], source=data["source"], date=data["date"])


@dataclass(frozen=True)
class CrossrefWork:
    """What Crossref's metadata says about one work, as the answer reports it."""

    title: str | None
    authors: tuple[str, ...]
    authors_total: int
    year: int | None
    container_title: str | None
    type: str | None
    updates: tuple[Notice, ...]  # notices that update this work
    update_to: tuple[Notice, ...] | None  # set when this DOI is itself such a notice

    @property
    def retracted(self) -> bool:
        return any(notice.type in RETRACTING_TYPES for notice in self.updates)

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "authors": list(self.authors),
            "authors_total": self.authors_total,
            "year": self.year,
            "container_title": self.container_title,
            "type": self.type,
            "retracted": self.retracted,
            "updates": [notice.as_json() for notice in self.updates],
            "update_to": (
                None if self.update_to is None else [n.as_json() for n in self.update_to]
            ),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CrossrefWork:
        update_to = data.get("update_to")
        return cls(
            title=data["title"],
            authors=tuple(data["authors"]),
            authors_total=data["authors_total"],
            year=data["year"],
            container_title=data["container_title"],
            type=data["type"],
            updates=tuple(Notice.from_json(n) for n in data["updates"]),
            update_to=None if update_to is None else tuple(Notice.from_json(n) for n in update_to),
        )


# --- the envelope ---------------------------------------------------------------------


def _message(body: bytes, message_type: str) -> Mapping[str, Any]:
    try:
        envelope = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise NotCrossrefAnswer("the body is not JSON") from None
    if not isinstance(envelope, dict) or envelope.get("status") != "ok":
        raise NotCrossrefAnswer("the envelope's status is not ok")
    if envelope.get("message-type") != message_type:
        raise NotCrossrefAnswer(f"expected message-type {message_type}")
    message = envelope.get("message")
    if not isinstance(message, dict):
        raise NotCrossrefAnswer("the envelope has no message")
    return message


def work_message(body: bytes) -> Mapping[str, Any]:
    """The ``message`` of a ``/works/{doi}`` answer; NotCrossrefAnswer otherwise."""
    return _message(body, "work")


def work_list_items(body: bytes) -> list[Mapping[str, Any]]:
    """The ``message.items`` of a ``/works?filter=…`` answer; NotCrossrefAnswer otherwise."""
    items = _message(body, "work-list").get("items")
    if not isinstance(items, list):
        raise NotCrossrefAnswer("the work list has no items")
    return [item for item in items if isinstance(item, dict)]


# --- fields -------------------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    """A field Crossref gives as a list; anything else a broken answer put there, as none."""
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    """Crossref's titles are lists of strings; the first, whitespace collapsed and capped."""
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str) and v.strip()), None)
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text:
        return None
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 3].rstrip() + "..."


def _date_parts(value: Any) -> list[int] | None:
    """The first ``date-parts`` entry of a Crossref date, e.g. [2010, 2, 6] or [1998]."""
    if not isinstance(value, dict):
        return None
    parts = value.get("date-parts")
    if not isinstance(parts, list) or not parts or not isinstance(parts[0], list):
        return None
    numbers = []
    for part in parts[0][:3]:
        if not isinstance(part, int) or isinstance(part, bool):
            break
        numbers.append(part)
    return numbers or None


def _iso_date(value: Any) -> str | None:
    parts = _date_parts(value)
    if parts is None:
        date_time = value.get("date-time") if isinstance(value, dict) else None
        return date_time[:10] if isinstance(date_time, str) and len(date_time) >= 10 else None
    year, *rest = parts
    return "-".join([f"{year:04d}", *(f"{n:02d}" for n in rest)])


def _year(message: Mapping[str, Any]) -> int | None:
    # ``issued`` is the earliest of Crossref's publication dates; the others are fallbacks.
    for key in ("issued", "published", "published-print", "published-online"):
        parts = _date_parts(message.get(key))
        if parts:
            return parts[0]
    return None


def _author(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    name = entry.get("name")  # an organisation as author
    if not isinstance(name, str):
        given, family = entry.get("given"), entry.get("family")
        name = " ".join(p for p in (given, family) if isinstance(p, str) and p.strip())
    return _text(name)


def update_type(value: Any) -> str | None:
    """Crossref's update type in one spelling: ``expression_of_concern``, ``retraction``."""
    if not isinstance(value, str) or not value.strip():
        return None
    return "_".join(value.strip().lower().replace("-", " ").split())[:64]


def _notice(entry: Any, doi: Any = None) -> Notice | None:
    """A notice from an ``updated-by`` or ``update-to`` entry; ``doi`` is the notice's own
    DOI when the entry names the work it updates instead (a filter answer's items)."""
    if not isinstance(entry, dict):
        return None
    doi = entry.get("DOI") if doi is None else doi
    if not isinstance(doi, str) or not doi.strip():
        return None
    kind = update_type(entry.get("type"))
    if kind is None:
        return None
    source = entry.get("source")
    return Notice(
        type=kind,
        doi=doi.strip().lower()[:300],
        source=source.strip()[:64] if isinstance(source, str) and source.strip() else None,
        date=_iso_date(entry.get("updated")),
    )


def _merged(notices: Iterable[Notice | None]) -> tuple[Notice, ...]:
    """One entry per (DOI, type, source), oldest first, at most MAX_NOTICES."""
    kept: dict[tuple[str, str, str | None], Notice] = {}
    for notice in notices:
        if notice is not None:
            kept.setdefault((notice.doi, notice.type, notice.source), notice)
    ordered = sorted(kept.values(), key=lambda n: (n.date or "", n.type, n.doi, n.source or ""))
    return tuple(ordered[:MAX_NOTICES])


def notices_updating(doi: str, items: Iterable[Mapping[str, Any]]) -> list[Notice]:
    """The notices in a ``filter=updates:{doi}`` work list whose ``update-to`` names the DOI."""
    found = []
    for item in items:
        notice_doi = item.get("DOI")
        if not isinstance(notice_doi, str):
            continue
        for entry in _list(item.get("update-to")):
            target = entry.get("DOI") if isinstance(entry, dict) else None
            if isinstance(target, str) and target.strip().lower() == doi:
                found.append(_notice(entry, notice_doi))
    return [n for n in found if n is not None]


def read_work(
    message: Mapping[str, Any], *, also_updated_by: Iterable[Notice] = ()
) -> CrossrefWork:
    """The ``crossref`` block from a work's ``message`` and the cross-checked notices."""
    authors = [name for name in map(_author, _list(message.get("author"))) if name]
    updated_by = [_notice(entry) for entry in _list(message.get("updated-by"))]
    update_to = _merged(_notice(entry) for entry in _list(message.get("update-to")))
    return CrossrefWork(
        title=_text(message.get("title")),
        authors=tuple(authors[:MAX_AUTHORS]),
        authors_total=len(authors),
        year=_year(message),
        container_title=_text(message.get("container-title")),
        type=_text(message.get("type")),
        updates=_merged([*updated_by, *also_updated_by]),
        update_to=update_to or None,
    )
