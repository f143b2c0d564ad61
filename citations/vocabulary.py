"""The words a question may use for a predicate: what full-text recall indexes beside a fact.

A fact's statement rarely holds the words a question asks with ("where does she live
now?" against "I moved to Munich last week"). So each fact is indexed with its
predicate's vocabulary too: the predicate's name as words, its description and its
synonyms. The built-ins' synonyms are below; a declared predicate brings its own
(``POST /v1/predicates`` ``synonyms``).

Migration 0012 compiles this table into the database's index triggers, so a change
here takes a migration that re-creates them (and re-indexes the facts).
"""

from __future__ import annotations

from collections.abc import Iterable

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
