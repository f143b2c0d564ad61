"""Web evidence written: a checked quote stored beside its record, and copied when it moves.

The checks that admit a quote, and the ones resolve repeats, are
``citations.selectors.web_evidence``.
"""

from __future__ import annotations

from collections.abc import Sequence

from citations.models import Evidence, EvidenceKind, WebSource
from citations.selectors.web_evidence import CheckedWebQuote
from receipts.payloads import quote_sha256


def web_evidence_add(authored: Evidence, checked: Sequence[CheckedWebQuote]) -> None:
    """Store each checked quote as a ``web`` row beside the record's own (saved) row, with
    its receipt's leaf index in the transparency log."""
    for piece in checked:
        row = Evidence.objects.create(
            project=authored.project,
            fact=authored.fact,
            observation=authored.observation,
            kind=EvidenceKind.WEB,
            byte_start=authored.byte_start,
            byte_end=authored.byte_end,
            quote_sha256=quote_sha256(piece.given.quote),
            extractor_version=authored.extractor_version,
            authored_by=authored.authored_by,
            asserted_from=authored.asserted_from,
            asserted_precision=authored.asserted_precision,
            created_at=authored.created_at,
        )
        WebSource.objects.create(
            evidence=row,
            quote=piece.given.quote,
            receipt=piece.given.receipt,
            receipt_index=piece.given.index,
            receipt_log_index=piece.log_index,
            **vars(piece.signed),
        )


def web_sources_copy(sources: Sequence[Evidence], moved: Sequence[Evidence]) -> None:
    """A moved web row keeps its page and receipt: copy them to the row that replaces it."""
    pairs = [
        (old, new) for old, new in zip(sources, moved, strict=True) if old.kind == EvidenceKind.WEB
    ]
    if not pairs:
        return
    webs = WebSource.objects.in_bulk([old.pk for old, _ in pairs])
    copies = []
    for old, new in pairs:
        web = webs[old.pk]
        web.pk = None
        web.evidence = new
        copies.append(web)
    WebSource.objects.bulk_create(copies)
