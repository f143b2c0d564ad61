"""The built-in predicates: the one table every other part of the ledger reads.

Each predicate has a name, a cardinality and a line of prose with an example message
the built-in extractor reads it from. Cardinality decides supersession:

- ``"one"``: one value at a time (a functional predicate). A later fact for the same
  subject closes the earlier one's validity (``lives_in``: moving replaces the city).
- ``"many"``: values accumulate (``speaks``: a second language adds to the first).

The extractor's patterns live in :mod:`citations.extract.extractor`; this module is the
catalogue (the API's predicate list, the docs pages, the serializers' choices and the
ledger's supersession all use it), so a predicate cannot be documented with another
cardinality than the one it is stored with.
"""

from __future__ import annotations

from dataclasses import dataclass

ONE = "one"
MANY = "many"
CARDINALITIES = (ONE, MANY)


@dataclass(frozen=True)
class Predicate:
    """A built-in predicate: what it means and how many values a subject has at once."""

    name: str
    cardinality: str  # ONE or MANY
    description: str
    example: str  # a message the built-in extractor reads this predicate from

    @property
    def functional(self) -> bool:
        return self.cardinality == ONE


def _p(name: str, cardinality: str, description: str, example: str) -> Predicate:
    return Predicate(name, cardinality, description, example)


# Ordered for reading: who the user is, where, work, family, then tastes and needs.
BUILTIN_PREDICATES: tuple[Predicate, ...] = (
    _p("name", ONE, "The name the user goes by.", "My name is Ana Ribeiro."),
    _p("pronouns", ONE, "The pronouns the user asks to be called by.", "My pronouns are she/her."),
    _p(
        "born_on",
        ONE,
        "The user's date of birth (year, month or day).",
        "I was born on 3 May 1990.",
    ),
    _p(
        "birthday",
        ONE,
        "The day of the year of the user's birthday (MM-DD).",
        "My birthday is on 14 March.",
    ),
    _p("born_in", ONE, "The place the user was born.", "I was born in Porto."),
    _p("from", ONE, "Where the user comes from or grew up.", "I'm from Valencia."),
    _p("lives_in", ONE, "Where the user lives now.", "I live in Lisbon."),
    _p("lived_in", MANY, "A place the user lived before.", "I used to live in Berlin."),
    _p("time_zone", ONE, "The user's time zone.", "My time zone is CET."),
    _p("works_at", ONE, "The user's current employer.", "I work at Acme Robotics."),
    _p("worked_at", MANY, "A former employer of the user.", "I used to work at IBM."),
    _p("job_title", ONE, "The user's job or role.", "I work as a data engineer."),
    _p(
        "studies_at",
        ONE,
        "The school or university the user attends.",
        "I study at the University of Leeds.",
    ),
    _p("has_partner", ONE, "The user's spouse or partner.", "My wife's name is Carla."),
    _p("has_child", MANY, "A child of the user.", "I have a daughter named Mia."),
    _p("has_sibling", MANY, "A brother or sister of the user.", "I have two older brothers."),
    _p("has_pet", MANY, "A pet the user has.", "I have a dog named Rex."),
    _p("speaks", MANY, "A language the user speaks.", "I speak Portuguese and French."),
    _p("native_language", ONE, "The user's first language.", "My native language is Greek."),
    _p("uses_language", MANY, "A programming language the user works in.", "I use Python at work."),
    _p(
        "uses_tool",
        MANY,
        "A tool, editor or product the user works with.",
        "I use Neovim and tmux.",
    ),
    _p(
        "prefers",
        MANY,
        "Something the user prefers (a setting, a style, a choice).",
        "I prefer dark mode.",
    ),
    _p("likes", MANY, "Something the user likes.", "I love hiking."),
    _p("dislikes", MANY, "Something the user dislikes.", "I hate cilantro."),
    _p("hobby", MANY, "A hobby or pastime of the user.", "My hobby is woodworking."),
    _p("favourite_colour", ONE, "The user's favourite colour.", "My favourite colour is green."),
    _p("favourite_food", ONE, "The user's favourite food or dish.", "My favorite food is ramen."),
    _p("favourite_drink", ONE, "The user's favourite drink.", "My favourite drink is mint tea."),
    _p("favourite_book", ONE, "The user's favourite book.", "My favourite book is Middlemarch."),
    _p("favourite_movie", ONE, "The user's favourite film.", "My favourite film is Spirited Away."),
    _p(
        "favourite_music",
        ONE,
        "The user's favourite band, artist or genre.",
        "My favourite band is Radiohead.",
    ),
    _p("favourite_sport", ONE, "The user's favourite sport.", "My favourite sport is tennis."),
    _p("diet", ONE, "The diet the user follows.", "I'm vegetarian."),
    _p("allergic_to", MANY, "Something the user is allergic to.", "I'm allergic to peanuts."),
    _p(
        "accessibility_need",
        MANY,
        "An accessibility need of the user (a condition or an aid they rely on).",
        "I use a screen reader.",
    ),
)

_BY_NAME: dict[str, Predicate] = {p.name: p for p in BUILTIN_PREDICATES}
BUILTIN_NAMES: tuple[str, ...] = tuple(_BY_NAME)
# Predicates with one value at a time; the ledger supersedes on these.
FUNCTIONAL: frozenset[str] = frozenset(p.name for p in BUILTIN_PREDICATES if p.functional)


def builtin_predicate(name: str) -> Predicate | None:
    """The built-in predicate called ``name``, or None."""
    return _BY_NAME.get(name)


def is_builtin(name: str) -> bool:
    return name in _BY_NAME


def cardinality_of(name: str) -> str:
    """The cardinality of a built-in predicate (KeyError for any other name)."""
    return _BY_NAME[name].cardinality
