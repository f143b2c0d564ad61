"""The words a question may use for a predicate: what full-text recall indexes beside a fact.

A fact's statement rarely holds the words a question asks with ("where does she live
now?" against "I moved to Munich last week"). So each fact is indexed with its
predicate's vocabulary too: the predicate's name as words, its description and its
synonyms. The built-ins' synonyms are below; a declared predicate brings its own
(``POST /v1/predicates`` ``synonyms``).

Migration 0014 compiles this table into the database's index triggers, so a change
here takes a migration that re-creates them (and re-indexes the facts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from citations.extract.predicates import BUILTIN_PREDICATES

# Words and short phrases a person asks about each built-in predicate with.
BUILTIN_SYNONYMS: dict[str, tuple[str, ...]] = {
    "name": ("called", "named", "full name", "first name", "surname", "who is"),
    "pronouns": ("she her", "he him", "they them", "gender", "address as"),
    "born_on": ("birth date", "date of birth", "age", "how old", "year born", "birth year"),
    "birthday": ("birth day", "celebrate", "anniversary of birth", "when born"),
    "born_in": ("birthplace", "place of birth", "native town", "hometown"),
    "from": ("origin", "hometown", "grew up", "nationality", "come from", "country"),
    "lives_in": (
        "live",
        "living",
        "home",
        "reside",
        "residence",
        "based",
        "city",
        "address",
        "moved",
        "move",
        "located",
        "where",
        "town",
        "stay",
    ),
    "lived_in": ("used to live", "previous home", "former city", "moved from", "past address"),
    "time_zone": ("timezone", "local time", "clock", "hours", "offset", "utc"),
    "works_at": (
        "job",
        "work",
        "working",
        "employer",
        "company",
        "office",
        "employed",
        "workplace",
        "firm",
        "career",
    ),
    "worked_at": ("previous job", "former employer", "used to work", "past company"),
    "job_title": ("role", "position", "occupation", "profession", "title", "do for a living"),
    "studies_at": ("school", "university", "college", "student", "study", "degree", "course"),
    "has_partner": (
        "husband",
        "wife",
        "spouse",
        "partner",
        "boyfriend",
        "girlfriend",
        "married",
        "fiance",
    ),
    "has_child": ("kids", "children", "son", "daughter", "baby", "family"),
    "has_sibling": ("brother", "sister", "siblings", "family"),
    "has_pet": ("dog", "cat", "animal", "pets", "puppy", "kitten"),
    "speaks": ("language", "languages", "fluent", "speak", "talk"),
    "native_language": ("mother tongue", "first language", "language grew up with"),
    "uses_language": ("programming", "code", "coding", "developer", "stack"),
    "uses_tool": ("software", "app", "editor", "product", "tools", "setup"),
    "prefers": ("preference", "rather", "choice", "settings", "prefer"),
    "likes": ("enjoy", "love", "fond", "fan", "into", "like", "interests"),
    "dislikes": ("hate", "can't stand", "avoid", "dislike", "not a fan", "annoy", "doesn't like"),
    "hobby": ("pastime", "free time", "spare time", "weekend", "fun", "hobbies"),
    "favourite_colour": ("favorite color", "colour", "color"),
    "favourite_food": ("favorite food", "dish", "meal", "eat", "cuisine"),
    "favourite_drink": ("favorite drink", "beverage", "coffee", "tea"),
    "favourite_book": ("favorite book", "novel", "reading", "author", "read"),
    "favourite_movie": ("favorite movie", "film", "cinema", "watch"),
    "favourite_music": ("favorite music", "band", "artist", "song", "genre", "listen"),
    "favourite_sport": ("favorite sport", "team", "play", "game"),
    "diet": (
        "vegan",
        "vegetarian",
        "eat",
        "food",
        "meat",
        "dietary",
        "pescatarian",
        "keto",
        "halal",
        "kosher",
        "restrictions",
    ),
    "allergic_to": (
        "allergy",
        "allergies",
        "allergic",
        "intolerance",
        "reaction",
        "avoid eating",
        "food safety",
    ),
    "accessibility_need": (
        "disability",
        "accessibility",
        "screen reader",
        "wheelchair",
        "hearing",
        "vision",
        "needs",
    ),
}


def predicate_vocabulary(name: str, description: str, synonyms: Iterable[str]) -> str:
    """The text indexed beside every fact of a predicate: its name, description, synonyms."""
    return " ".join([name.replace("_", " "), description, *synonyms]).strip()


def builtin_vocabularies() -> dict[str, str]:
    """Each built-in predicate's indexed vocabulary, by name."""
    return {
        p.name: predicate_vocabulary(p.name, p.description, BUILTIN_SYNONYMS.get(p.name, ()))
        for p in BUILTIN_PREDICATES
    }


# What a question asks for, read from its question words: the words full-text search
# drops as stop words ("where is he from?" has no other word), so the index cannot see
# them. Each pattern is matched against the question's words, lower case, one space
# apart ("where's" reads "where s"); a match says which predicates answer such a
# question, each with how squarely (0 to 1). The patterns go from general to specific:
# a later match replaces the weights of the predicates it names ("where … from" puts the
# origin above the home "where" put first). Ranked recall (citations.selectors.ranked)
# adds this to the text's score, the same way on either database; nothing here is per
# question or per subject.
QUESTION_INTENTS: tuple[tuple[str, Mapping[str, float]], ...] = (
    # "where": a place: where one lives first, then the other places a person has.
    (
        r"\bwhere\b",
        {
            "lives_in": 1.0,
            "from": 0.7,
            "born_in": 0.7,
            "works_at": 0.6,
            "studies_at": 0.6,
            "lived_in": 0.5,
            "worked_at": 0.5,
        },
    ),
    # "who": a person.
    (
        r"\bwho\b",
        {"has_partner": 1.0, "has_child": 0.8, "has_sibling": 0.8, "name": 0.7, "works_at": 0.5},
    ),
    # "does she have …": something a person has.
    (
        r"\b(do|does|did) \w+ have\b",
        {"has_pet": 0.6, "has_child": 0.6, "has_sibling": 0.6, "has_partner": 0.6},
    ),
    # A question in the past asks for a past state before a present one.
    (
        r"\b(did|before|previously|formerly|used to)\b",
        {"lived_in": 0.9, "worked_at": 0.9, "born_in": 0.6, "lives_in": 0.5, "works_at": 0.4},
    ),
    # "where … from", "where … originally": an origin.
    (r"\bwhere\b.*\b(from|originally)\b", {"from": 1.0, "born_in": 0.9, "lives_in": 0.4}),
    # "when": a date; "how old": an age.
    (r"\bwhen\b", {"birthday": 1.0, "born_on": 1.0}),
    (r"\bhow old\b", {"born_on": 1.0, "birthday": 0.6}),
    # "what does she do?", "what … do for a living / for work", "what work": an occupation
    # (not "what does she like to do?": "to do" is no verb of its own).
    (r"\bwhat\b.*(?<!\bto )\bdo\b( for\b|$)", {"job_title": 1.0, "works_at": 0.6}),
    (r"\bwhat (work|job|kind of work)\b", {"job_title": 1.0, "works_at": 0.6}),
    # "how" (not "how old", "how many", "how much"): a manner, a preference.
    (r"\bhow\b(?! (old|many|much)\b)", {"prefers": 1.0, "accessibility_need": 0.4}),
)

_WORDS = re.compile(r"\w+")
_INTENTS = tuple((re.compile(pattern), weights) for pattern, weights in QUESTION_INTENTS)


def question_intent(question: str) -> dict[str, float]:
    """The built-in predicates a question's words ask for, each with its weight (0 to 1)."""
    words = " ".join(_WORDS.findall(question.lower()))
    intent: dict[str, float] = {}
    for pattern, weights in _INTENTS:
        if pattern.search(words):
            intent.update(weights)
    return intent
