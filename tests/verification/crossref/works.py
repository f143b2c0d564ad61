"""Works shaped as Crossref records them (fields, nesting, sources), under the test prefix 10.5555.

Modelled on real records: a paper Retraction Watch lists as corrected and later
retracted, whose title Crossref prefixes "RETRACTED:", with the notices' own
records pointing back through ``update-to``.
"""

from __future__ import annotations

RETRACTED = "10.5555/retracted.1998"
RETRACTION_NOTICE = "10.5555/retraction.2010"
RETRACTED_CORRECTION = "10.5555/correction.2004"
CORRECTED = "10.5555/corrected.2019"
CORRECTION_NOTICE = "10.5555/corrected.2019.erratum"
CONCERN = "10.5555/concern.2021"
CONCERN_NOTICE = "10.5555/concern.2021.eoc"
QUIETLY_WITHDRAWN = "10.5555/quietly-withdrawn.2017"
WITHDRAWAL_NOTICE = "10.5555/withdrawal.2018"
CLEAN = "10.5555/clean.2020"
UNKNOWN = "10.5555/no-such-work"


def _date(*parts: int) -> dict:
    iso = "-".join([f"{parts[0]:04d}", *(f"{p:02d}" for p in parts[1:])])
    return {"date-parts": [list(parts)], "date-time": f"{iso}T00:00:00Z", "timestamp": 0}


def _update(doi: str, kind: str, source: str, *date: int, record: str | None = None) -> dict:
    entry = {
        "DOI": doi,
        "type": kind,
        "label": kind.replace("_", " ").capitalize(),
        "source": source,
        "updated": _date(*date),
    }
    if record:
        entry["record-id"] = record
    return entry


def _author(given: str, family: str, sequence: str = "additional") -> dict:
    return {
        "given": given,
        "family": family,
        "sequence": sequence,
        "affiliation": [],
        "role": [{"vocabulary": "crossref", "role": "author"}],
    }


_TWELVE_AUTHORS = [_author("AJ", "Wakefield", "first")] + [
    _author(f"{chr(65 + i)}", f"Coauthor{i}") for i in range(11)
]


def retracted_work() -> dict:
    return {
        "DOI": RETRACTED,
        "type": "journal-article",
        "title": ["RETRACTED: Ileal-lymphoid-nodular hyperplasia in a test journal"],
        "container-title": ["The Journal of Tests"],
        "publisher": "Test Publisher BV",
        "issued": {"date-parts": [[1998, 2]]},
        "published": {"date-parts": [[1998, 2]]},
        "author": _TWELVE_AUTHORS,
        "ISSN": ["0140-6736"],
        "volume": "351",
        "page": "637-641",
        "relation": {},
        "updated-by": [
            _update(
                RETRACTED_CORRECTION, "correction", "retraction-watch", 2004, 3, 6, record="17"
            ),
            _update(RETRACTION_NOTICE, "retraction", "retraction-watch", 2010, 2, 6, record="40"),
            _update(RETRACTION_NOTICE, "retraction", "publisher", 2010, 2, 6),
        ],
        "reference": [{"key": "ref1", "DOI": "10.5555/cited.elsewhere", "year": "1994"}],
    }


def retraction_notice() -> dict:
    return {
        "DOI": RETRACTION_NOTICE,
        "type": "journal-article",
        "title": ["Retraction—Ileal-lymphoid-nodular hyperplasia in a test journal"],
        "container-title": ["The Journal of Tests"],
        "issued": {"date-parts": [[2010, 2]]},
        "author": [],
        "update-to": [
            _update(RETRACTED, "retraction", "publisher", 2010, 2, 6),
            _update(RETRACTED, "retraction", "retraction-watch", 2010, 2, 6, record="40"),
        ],
    }


def retracted_correction() -> dict:
    return {
        "DOI": RETRACTED_CORRECTION,
        "type": "journal-article",
        "title": ["Retraction of an interpretation"],
        "issued": {"date-parts": [[2004, 3, 6]]},
        "update-to": [_update(RETRACTED, "correction", "retraction-watch", 2004, 3, 6)],
    }


def corrected_work() -> dict:
    return {
        "DOI": CORRECTED,
        "type": "journal-article",
        "title": ["Coastal nitrate levels over three decades"],
        "container-title": ["Marine Test Letters"],
        "issued": {"date-parts": [[2019, 7, 1]]},
        "author": [_author("Grace", "Hopper", "first"), _author("Alan", "Turing")],
        "relation": {"has-preprint": [{"id-type": "doi", "id": "10.5555/preprint.1"}]},
        "updated-by": [_update(CORRECTION_NOTICE, "correction", "publisher", 2020, 1, 15)],
    }


def correction_notice() -> dict:
    return {
        "DOI": CORRECTION_NOTICE,
        "type": "journal-article",
        "title": ["Correction to: Coastal nitrate levels over three decades"],
        "issued": {"date-parts": [[2020, 1, 15]]},
        "update-to": [_update(CORRECTED, "correction", "publisher", 2020, 1, 15)],
    }


def concern_work() -> dict:
    return {
        "DOI": CONCERN,
        "type": "journal-article",
        "title": ["A surprising result about estuaries"],
        "container-title": ["Estuary Test Reports"],
        "issued": {"date-parts": [[2021]]},
        "author": [{"name": "The Estuary Consortium", "sequence": "first", "affiliation": []}],
        "updated-by": [_update(CONCERN_NOTICE, "expression_of_concern", "publisher", 2022, 9, 30)],
    }


def concern_notice() -> dict:
    return {
        "DOI": CONCERN_NOTICE,
        "type": "journal-article",
        "title": ["Expression of concern: A surprising result about estuaries"],
        "issued": {"date-parts": [[2022, 9, 30]]},
        "update-to": [_update(CONCERN, "expression_of_concern", "publisher", 2022, 9, 30)],
    }


def quietly_withdrawn_work() -> dict:
    """A work whose own record lists no notice; only the notice's update-to names it."""
    return {
        "DOI": QUIETLY_WITHDRAWN,
        "type": "proceedings-article",
        "title": ["Fast matching of quotes"],
        "container-title": ["Proceedings of the Test Conference"],
        "issued": {"date-parts": [[2017, 6]]},
        "author": [_author("Edsger", "Dijkstra", "first")],
    }


def withdrawal_notice() -> dict:
    return {
        "DOI": WITHDRAWAL_NOTICE,
        "type": "proceedings-article",
        "title": ["Withdrawal notice"],
        "issued": {"date-parts": [[2018, 1, 2]]},
        "update-to": [_update(QUIETLY_WITHDRAWN, "withdrawal", "publisher", 2018, 1, 2)],
    }


def clean_work() -> dict:
    return {
        "DOI": CLEAN,
        "type": "journal-article",
        "title": ["  Regional   climate report\n 2025  "],
        "container-title": ["Climate Test Journal"],
        "issued": {"date-parts": [[2020, 11, 3]]},
        "author": [_author("Rachel", "Carson", "first")],
        "relation": {},
    }


def every_work() -> list[dict]:
    return [
        retracted_work(),
        retraction_notice(),
        retracted_correction(),
        corrected_work(),
        correction_notice(),
        concern_work(),
        concern_notice(),
        quietly_withdrawn_work(),
        withdrawal_notice(),
        clean_work(),
    ]
