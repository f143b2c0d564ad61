"""The deterministic fact extractor: first-person statements in, facts with exact byte offsets out.

Rules, in order, for each clause of a message (when in doubt, no fact):

- a clause ending in ``?`` is a question and yields nothing, and so does one inside
  double quotation marks (reported speech);
- a clause must open with a first-person pattern of one predicate (table PREDICATES);
- a hedge (HEDGES) or negation (NEGATIONS) anywhere in the clause (in a name's value
  only outside it), or earlier in the same sentence, yields nothing;
- a trailing date phrase sets the start of validity with its precision; a date after
  the message time, or a phrase of time to come (FUTURE), yields nothing; with no date,
  validity starts at the message time;
- the quote is the clause without its closing punctuation, located at UTF-8 byte
  offsets into the message.

The version string changes whenever any rule changes: ``extract/v2:<hash of the rules>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat

from citations.extract.dates import DATE_PATTERNS, UnusableDate, find_trailing_date

_LEAD = r"^(?:(?:so|well|actually|also|and|oh|btw|by the way|anyway|fyi|now),?\s+)*"
# Straight or typographic apostrophe, as people type them.
_APOS = "['\u2019]"
_I_AM = rf"(?:i am|i{_APOS}m|im)"
_I_HAVE = rf"(?:i have|i{_APOS}ve|ive)"

# predicate -> (cardinality, first-person patterns; the value is group "value").
# "one": a later fact replaces an earlier one (functional). "many": values accumulate.
PREDICATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "lives_in": (
        "one",
        (
            rf"{_I_AM} (?:now |currently )?(?:living|based|staying) in (?P<value>.+)",
            r"i (?:now |currently )?live in (?P<value>.+)",
            rf"{_I_HAVE} (?:been living|lived) in (?P<value>.+)",
            rf"(?:i|{_I_HAVE}|i just|{_I_HAVE} just) (?:moved|relocated) (?:to|back to) "
            r"(?P<value>.+)",
        ),
    ),
    "works_at": (
        "one",
        (
            r"i (?:now |currently )?work (?:at|for) (?P<value>.+)",
            rf"{_I_AM} (?:now |currently )?(?:working|employed) (?:at|for|by) (?P<value>.+)",
            rf"{_I_HAVE} (?:been working|worked) (?:at|for) (?P<value>.+)",
            rf"(?:i|{_I_HAVE}|i just) (?:joined|started (?:working )?(?:at|with|for)) "
            r"(?P<value>.+)",
        ),
    ),
    "name": (
        "one",
        (
            r"my name is (?P<value>.+)",
            rf"(?:{_I_AM} called|call me|people call me) (?P<value>.+)",
        ),
    ),
    "born_on": (
        "one",
        (r"i was born (?P<value>(?:on|in) .+)",),
    ),
    "birthday": (
        "one",
        (r"my birthday is (?:on )?(?:the )?(?P<value>.+)",),
    ),
    "likes": (
        "many",
        (r"i (?:really |absolutely |truly )?(?:like|love|enjoy|adore) (?P<value>.+)",),
    ),
    "dislikes": (
        "many",
        (r"i (?:really |absolutely |truly )?(?:dislike|hate|detest|loathe) (?P<value>.+)",),
    ),
    "has_pet": (
        "many",
        (
            rf"(?:i have|{_I_HAVE} got|i've|i own|i adopted|i got) (?P<value>(?:a|an|one|two|"
            r"three|\d+) (?:pet )?(?:dog|cat|puppy|kitten|rabbit|hamster|parrot|bird|fish|"
            r"horse|tortoise|turtle|guinea pig|ferret|snake|lizard)s?"
            r"(?: (?:named|called) [A-Z][\w'-]*)?)",
        ),
    ),
    "allergic_to": (
        "many",
        (
            rf"{_I_AM} (?:very |severely |quite )?allergic to (?P<value>.+)",
            r"i have an? (?:severe |mild )?(?:\w+ )?allergy to (?P<value>.+)",
        ),
    ),
    "speaks": (
        "many",
        (
            r"i (?:can )?speak (?P<value>.+)",
            rf"{_I_AM} (?:fluent|native) in (?P<value>.+)",
        ),
    ),
}
# Predicates whose value is itself a date; validity starts at that date.
DATE_VALUED = frozenset({"born_on"})
# Predicates whose value is split on "and" and commas into one fact per item.
LIST_VALUED = frozenset({"speaks", "allergic_to"})

HEDGES = (
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "might",
    "could",
    "would",
    "should",
    "i think",
    "i guess",
    "i believe",
    "i suppose",
    "not sure",
    "unsure",
    "kind of",
    "sort of",
    "hopefully",
    "i hope",
    "i wish",
    "if",
    "unless",
    "planning",
    "going to",
    "gonna",
    "will",
    "someday",
    "one day",
    "thinking about",
    "considering",
    "pretend",
    "imagine",
    "apparently",
    "supposedly",
    "used to",
)
# Times still to come: a fact cannot begin after the message that states it, and these
# phrases are no date the rules resolve, so without this they would end up in the value
# ("I moved to Rome next week" would say Rome from now on).
FUTURE = (
    r"tomorrow",
    r"soon",
    r"next (?:week|weekend|month|year|spring|summer|autumn|fall|winter|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|"
    r"july|august|september|october|november|december)",
    r"in (?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a couple of|a few) (?:minute|hour|day|week|month|year)s?",
    r"later (?:today|tonight|this \w+|on)",
)
NEGATIONS = ("not", "n't", "never", "no longer", "no", "nor", "neither", "nobody", "nothing")

# The value stops at these words: what follows qualifies the fact, it is not part of it.
VALUE_STOPS = (
    ",",
    ";",
    ":",
    " and ",
    " but ",
    " because ",
    " since ",
    " with ",
    " where ",
    " as ",
    " for the ",
    " now",
    " these days",
    " at the moment",
    " currently",
    " full-time",
    " part-time",
)
VALUE_STOPS_BY_PREDICATE = {"likes": (",", ";", ":", " but ", " because "), "dislikes": None}
VALUE_STOPS_BY_PREDICATE["dislikes"] = VALUE_STOPS_BY_PREDICATE["likes"]
for _name in ("speaks", "allergic_to"):
    VALUE_STOPS_BY_PREDICATE[_name] = (";", ":", " but ", " because ", " since ", " now")

# Words that point elsewhere instead of naming a value: "I live there" says nothing.
VAGUE_VALUES = frozenset(
    {"it", "there", "here", "them", "that", "this", "him", "her", "you", "one"}
)

RULES_VERSION = "v2"


def _rules_hash() -> str:
    rules = {
        "lead": _LEAD,
        "predicates": PREDICATES,
        "date_valued": sorted(DATE_VALUED),
        "list_valued": sorted(LIST_VALUED),
        "hedges": HEDGES,
        "negations": NEGATIONS,
        "future": FUTURE,
        "vague": sorted(VAGUE_VALUES),
        "stops": VALUE_STOPS,
        "stops_by_predicate": VALUE_STOPS_BY_PREDICATE,
        "dates": DATE_PATTERNS,
    }
    canonical = json.dumps(rules, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


EXTRACTOR_VERSION = f"extract/{RULES_VERSION}:{_rules_hash()}"

CARDINALITY = {predicate: spec[0] for predicate, spec in PREDICATES.items()}
_PATTERNS = tuple(
    (predicate, re.compile(_LEAD + pattern + r"$", re.IGNORECASE))
    for predicate, (_, patterns) in PREDICATES.items()
    for pattern in patterns
)
_HEDGE_RE = re.compile(r"\b(?:" + "|".join(re.escape(h) for h in HEDGES) + r")\b", re.IGNORECASE)
_FUTURE_RE = re.compile(r"\b(?:" + "|".join(FUTURE) + r")\b", re.IGNORECASE)
_NEGATION_RE = re.compile(
    r"(?:\b(?:not|never|no longer|no|nor|neither|nobody|nothing)\b|n['\u2019]t)", re.IGNORECASE
)
# Straight and typographic double quotation marks: an odd count opens a quotation.
_QUOTE_MARKS = ('"', "\u201c", "\u201d")
# The longest hedge or negation: how far back a resumed scan must look.
_DOUBT_SPAN = max(len(word) for word in (*HEDGES, *NEGATIONS))
# Sentences end at . ! ? or a line break; clauses split further at ";", ": " and at
# ", and I" / " and I" / ", but my" so each first-person statement stands alone.
_SENTENCE_RE = re.compile(r"[^.!?\n]+(?:[.!?]+|(?=\n)|$)")
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*;\s*|:\s+|,?\s+(?:and|but|plus|also)\s+(?=(?:i|i'm|i've|my)\b)", re.IGNORECASE
)
_ARTICLE_RE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Extraction:
    """One fact found in a message, with the exact bytes it came from."""

    predicate: str
    cardinality: str  # "one" (functional) or "many"
    value: str  # as written in the message
    value_key: str  # normalised for comparing values: same key, same claim
    statement: str
    quote: str
    byte_start: int
    byte_end: int
    valid_from: datetime
    valid_precision: str


def _clauses(text: str) -> list[tuple[int, int, str, int]]:
    """Clauses as (start, end, the sentence's closing punctuation, the sentence's start)."""
    spans = []
    for sentence in _SENTENCE_RE.finditer(text):
        body = sentence.group(0)
        stripped = body.rstrip()
        terminal = stripped[len(stripped.rstrip(".!?")) :]
        start = sentence.start()
        cursor = 0
        core = stripped[: len(stripped) - len(terminal)]
        pieces = []
        for split in _CLAUSE_SPLIT_RE.finditer(core):
            pieces.append((cursor, split.start()))
            cursor = split.end()
        pieces.append((cursor, len(core)))
        for piece_start, piece_end in pieces:
            piece = core[piece_start:piece_end]
            # A clause starts at its first letter or digit: emoji, bullets and
            # spaces before it are not part of any quote.
            lead = 0
            while lead < len(piece) and not piece[lead].isalnum():
                lead += 1
            trail = len(piece.rstrip())
            if trail > lead:
                spans.append(
                    (start + piece_start + lead, start + piece_start + trail, terminal, start)
                )
    return spans


def _cut_value(value: str, predicate: str) -> tuple[str, str]:
    """Split the captured tail into the value and the qualifying words after it."""
    stops = VALUE_STOPS_BY_PREDICATE.get(predicate) or VALUE_STOPS
    lowered = value.lower()
    cut = len(value)
    for stop in stops:
        index = lowered.find(stop)
        if 0 < index < cut:
            cut = index
    return value[:cut].strip(), value[cut:]


def value_key(value: str) -> str:
    """Normalise a value so the same claim worded alike compares equal."""
    words = (
        _ARTICLE_RE.sub("", value.strip().strip("\"'\u201c\u201d\u2018\u2019")).casefold().split()
    )
    return " ".join(words)


def _split_list(value: str) -> list[str]:
    parts = re.split(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s*&\s*", value)
    return [part.strip() for part in parts if part.strip()]


def extract(text: str, *, occurred_at: datetime) -> list[Extraction]:
    """Every fact the rules find in ``text``, a message sent at ``occurred_at`` (aware)."""
    found: list[Extraction] = []
    # Both scans below move forward only, so a message of many clauses costs time in
    # proportion to its length, not to its length times its number of clauses.
    sentence, doubted, scanned = -1, False, 0
    quoted, quotes_counted = False, 0
    chars_seen, bytes_seen = 0, 0
    for start, end, terminal, sentence_start in _clauses(text):
        if sentence_start != sentence:
            sentence, doubted, scanned = sentence_start, False, sentence_start
            quoted, quotes_counted = False, sentence_start
        # '"I live in Rome," he said': words inside quotation marks are someone's
        # speech, and not necessarily the writer's own, so they give no fact.
        quoted ^= sum(map(text.count, _QUOTE_MARKS, repeat(quotes_counted), repeat(start))) % 2
        quotes_counted = start
        if not doubted and start > scanned:
            # "I'm not sure, but I live in Dublin": doubt earlier in the sentence covers
            # it. Only the text not yet scanned is searched, plus enough before it to
            # catch a word that straddles the previous clause's start.
            pos = max(sentence_start, scanned - _DOUBT_SPAN)
            doubted = bool(
                _HEDGE_RE.search(text, pos, start) or _NEGATION_RE.search(text, pos, start)
            )
            scanned = start
        if "?" in terminal or doubted or quoted:
            continue
        clause = text[start:end]
        for predicate, pattern in _PATTERNS:
            match = pattern.match(clause)
            if match is None:
                continue
            bytes_seen += len(text[chars_seen:start].encode("utf-8"))
            chars_seen = start
            found.extend(_facts_from(clause, bytes_seen, terminal, predicate, match, occurred_at))
            break
    return found


def _facts_from(
    clause: str,
    byte_start: int,
    terminal: str,
    predicate: str,
    match: re.Match[str],
    occurred_at: datetime,
) -> list[Extraction]:
    if _FUTURE_RE.search(clause):
        return []
    raw = match.group("value")
    value_start = match.start("value")
    try:
        # A birthday names a day of every year, not the day the fact began.
        date = None if predicate == "birthday" else find_trailing_date(raw, occurred_at)
    except UnusableDate:
        return []
    if predicate in DATE_VALUED:
        if date is None or date.phrase_start != 0:
            return []
        value, rest = raw, ""
    else:
        if date is not None:
            raw = raw[: date.phrase_start].rstrip()
        value, rest = _cut_value(raw.strip(), predicate)
    # Hedges and negations anywhere outside the value itself void the clause.
    outside = clause[:value_start] + " " + rest
    if predicate not in DATE_VALUED and date is not None:
        outside += " " + match.group("value")[date.phrase_start :]
    if _HEDGE_RE.search(outside) or _NEGATION_RE.search(outside):
        return []
    # Doubt inside the value counts too ("I live in Rome I think"); a name may be "Will".
    if predicate != "name" and (_NEGATION_RE.search(value) or _HEDGE_RE.search(value)):
        return []
    value = value.strip().strip("\"'\u201c\u201d\u2018\u2019").strip()
    if not value or len(value) > 120 or value_key(value) in VAGUE_VALUES:
        return []
    if predicate == "birthday":
        try:
            # A leap year, so that 29 February is a birthday too.
            birthday = find_trailing_date(
                "on " + value, occurred_at.replace(year=2024, month=12, day=31)
            )
        except UnusableDate:
            return []
        if birthday is None or birthday.precision != "day" or birthday.phrase_start != 0:
            return []
        value = birthday.at.strftime("%m-%d")
    valid_from, precision = occurred_at, "instant"
    if date is not None:
        valid_from, precision = date.at, date.precision
    if predicate in DATE_VALUED:
        value = valid_from.date().isoformat()
        if precision == "year":
            value = value[:4]
        elif precision == "month":
            value = value[:7]
    quote = clause
    byte_end = byte_start + len(quote.encode("utf-8"))
    statement = quote + (terminal.strip()[:1] or ".")
    values = _split_list(value) if predicate in LIST_VALUED else [value]
    return [
        Extraction(
            predicate=predicate,
            cardinality=CARDINALITY[predicate],
            value=item,
            value_key=value_key(item),
            statement=statement,
            quote=quote,
            byte_start=byte_start,
            byte_end=byte_end,
            valid_from=valid_from,
            valid_precision=precision,
        )
        for item in values
        if value_key(item)
    ]
