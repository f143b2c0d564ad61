"""The deterministic fact extractor: first-person statements in, facts with exact byte offsets out.

Rules, in order, for each clause of a message (when in doubt, no fact):

- a clause ending in ``?`` is a question and yields nothing, and so does one inside
  double quotation marks (reported speech);
- a clause must open with a first-person pattern of one predicate (table PATTERNS; the
  predicates themselves, with their cardinality, are citations.extract.predicates);
- a hedge (HEDGES) or negation (NEGATIONS) anywhere in the clause, or earlier in the
  same sentence, yields nothing (a name may be a hedge word, "Will"; a predicate's own
  words, OWN_WORDS, such as "used to" for lived_in, are no doubt);
- the value must be of the predicate's kind: a capital for names and places
  (CAPITALISED), a known programming language (LANGUAGES), a named tool; a value that
  points elsewhere ("it", "you guys") yields nothing; of the patterns a clause opens
  with, the first that yields facts wins;
- a trailing date phrase sets the start of validity with its precision; a date after
  the message time, or a phrase of time to come (FUTURE), yields nothing; with no date,
  validity starts at the message time;
- the quote is the clause without its closing punctuation, located at UTF-8 byte
  offsets into the message.
- a phrase of time before the subject (FRONTED: "Since 2019, I've lived in Oslo") stays
  in the quote and dates the fact; a statement before a question in the same sentence
  (QUESTION_TAIL: "I love chess, any clubs near me?") counts; chat fillers (FILLERS)
  end a value;
- a clause with its subject left out ("based in Oslo", "mostly write Go") is read with
  the subject its opening verb implies (IMPLIED_SUBJECTS); an adverb may come before the
  subject ("Currently I work for…", lead words);
- an introduction reads what follows it ("I'm Ada, a data scientist", "I'm Idris, 41,
  work at Unilever", "I'm Kit, she/her pronouns"; a lower-case name only before a
  job), and a fact may come with another ("I work for Bosch as an engineer", "I live in
  Derry with my husband Conor"): ``_read_alongside``;
- a list closed by "and" keeps its commas ("kayaking, chess and old films"); a clause of
  someone or something else (", she might…", "but that's not…") is a clause of its own,
  so its doubt does not void the first one's fact;
- a clause that corrects an earlier message ("I meant X, not Y", "make that X", "I live
  in X, not Y", "Actually, I live in X") is a Correction, not a fact (``read``); which
  earlier fact it corrects is ``correction_target``'s rule, applied by the ingest service.

The version string changes whenever any rule changes: ``extract/v3:<hash of the rules>``.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import repeat

from citations.extract.dates import DATE_PATTERNS, ResolvedDate, UnusableDate, find_trailing_date
from citations.extract.predicates import cardinality_of

_LEAD = (
    r"^(?:(?:so|well|actually|also|and|oh|btw|by the way|anyway|fyi|now|hi|hello|hey|"
    r"hi there|hello there|ok|okay|yeah|yes|um|just so you know|for the record|"
    # "Currently I work for…", "These days I live in…": when or where, before the subject.
    r"currently|these days|nowadays|right now|at the moment|originally|at work),?\s+)*"
)
# Straight or typographic apostrophe, as people type them.
_APOS = "['\u2019]"
_I_AM = rf"(?:i am|i{_APOS}m|im)"
_I_HAVE = rf"(?:i have|i{_APOS}ve|ive)"
# "We" for what a household shares: "we moved to Munich", "we're vegan", "we have twins".
_WE_ARE = rf"(?:we are|we{_APOS}re)"
_WE_HAVE = rf"(?:we have|we{_APOS}ve)"
_I_AM_WE_ARE = rf"(?:{_I_AM}|{_WE_ARE})"
# "my name is" and "my name's" alike.
_IS = rf"(?: is|{_APOS}s)"

_A = r"(?:a|an|one|two|three|four|five|six|\d+)"
# A proper name as people write one: each word capitalised (Latin letters with accents too).
_CAP = "(?-i:[A-Z\u00c0-\u00d6\u00d8-\u00de\u0100-\u017f])"
_NAME = rf"{_CAP}[\w'\u2019-]*(?: {_CAP}[\w'\u2019-]*){{0,3}}"
# A place's name word: capitalised, then lower-case letters ("GMT-5" and "CET" are none).
_PLACE_WORD = rf"{_CAP}(?-i:[a-z\u00df-\u00ff'\u2019-])+"
_NAMED = rf"(?: (?:named|called) {_NAME}(?: and {_NAME})?)?"
_MONTH_WORD = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b"
)
_FAV = r"my (?:all-time |absolute |very )?(?:favou?rite|fave?)"
_FAVOURITES = {
    "favourite_colour": r"colou?r",
    "favourite_food": r"(?:food|dish|meal|cuisine|snack|dessert)",
    "favourite_drink": r"(?:drink|beverage|cocktail|beer|wine|whisky|whiskey|coffee|tea)",
    "favourite_book": r"(?:book|novel)",
    "favourite_movie": r"(?:movie|film)",
    "favourite_music": (
        r"(?:band|singer|artist|musician|album|song|composer|(?:kind|genre) of music)"
    ),
    "favourite_sport": r"sport",
}
_FAVOURITE_PATTERNS = {
    name: (rf"{_FAV} {thing}{_IS} (?P<value>.+)", rf"(?P<value>.+?) is {_FAV} {thing}")
    for name, thing in _FAVOURITES.items()
}
_JOBS = (
    r"(?:engineer|developer|programmer|designer|teacher|professor|lecturer|nurse|doctor|"
    r"physician|surgeon|dentist|pharmacist|lawyer|attorney|solicitor|accountant|architect|"
    r"scientist|researcher|analyst|consultant|manager|director|writer|journalist|editor|"
    r"translator|chef|cook|baker|electrician|plumber|carpenter|mechanic|pilot|firefighter|"
    r"police officer|paramedic|therapist|psychologist|librarian|photographer|illustrator|"
    r"musician|actor|actress|farmer|cashier|waiter|waitress|barista|veterinarian|vet|"
    r"technician|administrator|founder|co-founder|ceo|cto|cfo|intern|freelancer|"
    r"entrepreneur|recruiter|marketer|salesperson|tester|student|midwife|paralegal|"
    r"social worker|data scientist|product owner|scrum master|sysadmin|devops engineer|"
    r"sre|site reliability engineer|physiotherapist|physio|optician|optometrist|"
    r"radiographer|psychiatrist|paediatrician|pediatrician|receptionist|secretary|clerk|"
    r"carer|caregiver|hairdresser|barber|butcher|tailor|banker|economist|statistician|"
    r"mathematician|physicist|chemist|biologist|historian|linguist|artist|painter|"
    r"dancer|singer|composer|producer|animator|copywriter|coach|instructor|tutor|"
    r"counsellor|counselor|nanny|courier|builder|welder|gardener|florist|bus driver|"
    r"truck driver|lorry driver|taxi driver|delivery driver)"
)
_DIETS = (
    r"(?:vegetarian|vegan|pescatarian|pescetarian|flexitarian|lacto-vegetarian|"
    r"ovo-vegetarian|plant-based|gluten-free|dairy-free|keto|paleo|halal|kosher|"
    r"low-carb|low-fodmap|carnivore)"
)
_AIDS = (
    r"(?:an? )?(?P<value>screen reader|screen magnifier|magnifier|hearing aids?|wheelchair|"
    r"cochlear implant|captions|subtitles|closed captions|large text|high contrast|"
    r"text-to-speech|speech-to-text|voice control|braille display|white cane|cane|"
    r"walking stick|mobility scooter|sign language interpreter|switch access|eye tracker)"
)
_CONDITIONS = (
    r"(?:colou?r-?blind|colou?r blind|deaf|hard of hearing|blind|partially sighted|"
    r"visually impaired|hearing impaired|dyslexic|autistic|neurodivergent|"
    r"a wheelchair user|partially deaf|legally blind|deafblind)"
)
LANGUAGES = frozenset(
    [
        "python",
        "javascript",
        "typescript",
        "java",
        "kotlin",
        "swift",
        "go",
        "golang",
        "rust",
        "c",
        "c++",
        "c#",
        "f#",
        "ruby",
        "php",
        "perl",
        "scala",
        "haskell",
        "elixir",
        "erlang",
        "clojure",
        "ocaml",
        "r",
        "julia",
        "matlab",
        "lua",
        "dart",
        "sql",
        "bash",
        "shell",
        "powershell",
        "fortran",
        "cobol",
        "zig",
        "nim",
        "crystal",
        "objective-c",
        "groovy",
        "lisp",
        "scheme",
        "prolog",
        "assembly",
        "solidity",
        "vba",
        "delphi",
        "pascal",
        "elm",
        "racket",
        "verilog",
        "vhdl",
    ]
)
# Tools written in lower case; any other tool must be written with a capital.
LOWER_CASE_TOOLS = frozenset(
    [
        "vim",
        "neovim",
        "emacs",
        "nano",
        "git",
        "tmux",
        "zsh",
        "fish",
        "docker",
        "kubectl",
        "npm",
        "yarn",
        "pnpm",
        "pip",
        "conda",
        "poetry",
        "make",
        "cmake",
        "gdb",
        "curl",
        "jq",
        "ffmpeg",
        "latex",
    ]
)

# predicate -> first-person patterns (the value is group "value"). Clauses are tried
# against the patterns in this order, and the first one that yields facts wins.
PATTERNS: dict[str, tuple[str, ...]] = {
    "lives_in": (
        rf"{_I_AM_WE_ARE} (?:now |currently )?(?:living|based|staying|settled) in (?P<value>.+)",
        r"(?:i|we) (?:now |currently )?live in (?P<value>.+)",
        rf"(?:{_I_HAVE}|{_WE_HAVE}) (?:been living|lived) in (?P<value>.+)",
        rf"(?:i|we|{_I_HAVE}|{_WE_HAVE})(?: just| finally)? (?:moved|relocated) (?:to|back to) "
        r"(?P<value>.+)",
        # "I'm in Lisbon now": a place by name, and nothing that makes it a visit.
        rf"{_I_AM_WE_ARE} (?:now |currently )?in (?P<value>{_PLACE_WORD}(?: {_PLACE_WORD})?)"
        r"(?P<rest>(?: now| these days| at the moment|,| so | but | and ).*)?",
    ),
    "lived_in": (
        r"(?:i|we) (?:used to live|previously lived|once lived|lived) in (?P<value>.+)",
        r"i (?:grew up and )?(?:spent \w+ years|spent my childhood) in (?P<value>.+)",
    ),
    "works_at": (
        r"i (?:now |currently )?work (?:at|for) (?P<value>.+)",
        rf"{_I_AM} (?:now |currently )?(?:working|employed) (?:at|for|by) (?P<value>.+)",
        rf"{_I_HAVE} (?:been working|worked) (?:at|for) (?P<value>.+)",
        rf"(?:i|{_I_HAVE}|i just) (?:joined|started (?:working )?(?:at|with|for)) "
        r"(?P<value>.+)",
        # "just started at Shopify": the subject left out, as chat leaves it.
        r"just (?:joined|started (?:working )?(?:at|with|for)) (?P<value>.+)",
        rf"{_I_HAVE} been at (?P<value>{_CAP}.+)",
        # "I just landed a job at Xero", "got a new job with the council".
        r"(?:i )?(?:just )?(?:landed|got|took|accepted|started) a (?:new )?job (?:at|with) "
        r"(?P<value>.+)",
        rf"i (?:now |currently )?teach (?:at|in) (?P<value>{_CAP}.+)",
    ),
    "worked_at": (
        r"i (?:used to work|previously worked|once worked|worked) (?:at|for) (?P<value>.+)",
        # "I was at Google for five years": a stay with a length, not a visit.
        rf"i was (?:at|with) (?P<value>{_CAP}.+?)(?P<rest> for (?:\w+ )?(?:years|months)\b.*)",
    ),
    "studies_at": (
        rf"(?:i (?:now |currently )?study at|{_I_AM} (?:now |currently )?(?:a student|"
        r"studying \w+|studying|enrolled|doing (?:a|my) (?:master's|masters|master\u2019s|phd|"
        r"degree|bachelor's|doctorate|ba|bsc|msc|ma)) at) (?P<value>.+)",
    ),
    "job_title": (
        rf"i (?:now |currently )?work as (?:an? )?(?P<value>(?:[\w-]+ ){{0,3}}?{_JOBS})"
        r"(?P<rest>(?: (?:at|for|in|with|by) .+)?)",
        r"my (?:job title|role|position|occupation|profession) is (?:an? )?(?!to )"
        r"(?P<value>.+)",
        rf"{_I_AM} (?:now |currently )?(?:an? )(?P<value>(?:[\w-]+ ){{0,3}}?{_JOBS})"
        r"(?P<rest>(?:(?: (?:at|for|in|with|by|on)|,) .+)?)",
        rf"{_I_HAVE} been (?:an? )(?P<value>(?:[\w-]+ ){{0,3}}?{_JOBS})"
        r"(?P<rest> for .+)",
    ),
    "name": (
        rf"my name{_IS} (?P<value>.+)",
        rf"(?:{_I_AM} called|call me|people call me|everyone calls me|i go by) (?P<value>{_CAP}.*)",
        # "I'm Ivana" and "I am Tomás": a name alone, or before a comma or "from".
        rf"{_I_AM} (?P<value>{_NAME})(?P<rest>(?:,| from | here\b| btw\b| by the way).*)?",
    ),
    "pronouns": (
        r"my pronouns are (?P<value>[a-z]+/[a-z]+(?:/[a-z]+)?)",
        r"i use (?P<value>[a-z]+/[a-z]+(?:/[a-z]+)?) pronouns",
    ),
    "born_on": (rf"i was born (?P<value>(?:on|in) (?=\d|the\b|{_MONTH_WORD}).+)",),
    "born_in": (rf"i was born (?:and raised )?in (?!\d|the \d|{_MONTH_WORD})(?P<value>.+)",),
    "from": (
        rf"{_I_AM} (?:originally )?from (?P<value>.+)",
        r"i (?:originally )?come from (?P<value>.+)",
        r"i grew up (?:in|on) (?P<value>.+)",
    ),
    "time_zone": (
        rf"my (?:time ?zone|timezone|tz){_IS} (?P<value>.+)",
        rf"{_I_AM} (?:in|on) (?:the )?(?P<value>[\w/+:\u2212-]+) (?:time ?zone|timezone)",
        rf"{_I_AM} on (?P<value>{_CAP}\w+(?: {_CAP}\w+)? time)",
        rf"{_I_AM} (?:in|on) (?P<value>(?:UTC|GMT) ?[+\u2212-] ?\d{{1,2}}(?::\d\d)?)",
    ),
    "birthday": (rf"my birthday{_IS} (?:on )?(?:the )?(?P<value>.+)",),
    "has_partner": (
        # "my husband Mike says...", "my husband is Vikram": the partner by name.
        rf"my (?:wife|husband|partner|spouse|girlfriend|boyfriend|fianc[ée]e?)(?: is)? "
        rf"(?P<value>{_CAP}[\w'\u2019-]*)(?P<rest>(?: .*)?)",
        r"my (?:wife|husband|partner|spouse|girlfriend|boyfriend|fianc[ée]e?)"
        rf"(?:'s|\u2019s) name is (?P<value>{_NAME})",
        rf"my (?:wife|husband|partner|spouse|girlfriend|boyfriend|fianc[ée]e?) is "
        rf"(?:called|named) (?P<value>{_NAME})",
        rf"{_I_AM} (?:married to|engaged to|dating) (?P<value>{_NAME})",
    ),
    "has_child": (
        rf"(?:i have|we have|{_I_HAVE} got|{_WE_HAVE} got|i've|i had) (?P<value>(?:{_A} "
        r"(?:(?:young|little|baby|newborn|"
        r"teenage|grown-up|grown|adult|older|younger|twin|\d+-year-old) )*(?:son|daughter|"
        rf"child|kid|baby|stepson|stepdaughter|children|kids|twins|boy|girl)s?|twins){_NAMED})"
        r"(?P<rest>(?:,| too\b| who | and ).*)?",
        rf"my (?:son|daughter) (?P<value>{_CAP}[\w'\u2019-]*)(?P<rest>(?: .*)?)",
        rf"my (?:son|daughter|child|kid|baby)(?:'s|\u2019s name is| is called| is named| name is"
        rf"|'s name is) (?P<value>{_NAME})",
    ),
    "has_sibling": (
        rf"(?:i have|{_I_HAVE} got|i've) (?P<value>{_A} (?:(?:older|younger|big|little|twin|"
        rf"half|step) ?-?)*(?:brother|sister|sibling)s?{_NAMED})"
        r"(?P<rest>(?:,| in | who | and | too\b).*)?",
        rf"my (?:older |younger |big |little |twin )?(?:brother|sister)(?:'s name is|\u2019s "
        rf"name is| is called| is named) (?P<value>{_NAME})",
    ),
    "has_pet": (
        rf"(?:i have|we have|{_I_HAVE} got|{_WE_HAVE} got|i've|we've|i own|we own|i adopted|"
        r"we adopted|i got|we got) (?P<value>(?:a|an|one|two|"
        r"three|\d+) (?:pet |little |rescue |old |young |golden |black |white |ginger )?(?:dog|"
        r"cat|puppy|kitten|rabbit|hamster|parrot|bird|fish|retriever|labrador|terrier|spaniel|"
        r"horse|tortoise|turtle|guinea pig|ferret|snake|lizard)s?"
        r"(?: (?:named|called) [A-Z][\w'-]*)?)(?P<rest>(?:,| too\b| who | that | at home).*)?",
    ),
    "native_language": (
        r"my (?:native language|first language|mother tongue|native tongue) is (?P<value>.+)",
        rf"{_I_AM} a native (?P<value>{_CAP}\w+) speaker",
    ),
    "speaks": (
        r"i (?:can )?speak (?!a bit|a little|some |basic |broken )(?P<value>.+?)"
        r"(?P<rest>(?:,? and |, )(?:a bit|a little|some|basic|broken) .*)?",
        rf"{_I_AM} (?:fluent|native) in (?P<value>.+)",
    ),
    "accessibility_need": (
        rf"i (?:rely on|use|need|depend on|wear) {_AIDS}(?: (?:on|for|in|when|to|at|with) .+"
        r"| sometimes| mostly| every day| daily| now| these days)?",
        rf"{_I_AM} (?P<value>{_CONDITIONS})(?P<rest>(?:,| so | and ).*)?",
        r"i have (?P<value>dyslexia|adhd|low vision|tinnitus|colou?r blindness|hearing loss|"
        r"epilepsy|photosensitive epilepsy|dyspraxia|rsi|limited mobility)"
        r"(?P<rest>(?:,| since | and ).*)?",
    ),
    "uses_language": (
        r"i (?:mostly |mainly |primarily |usually |also |now )?(?:use|write|code in|program in|"
        r"develop in|work in|work with|am coding in|'m coding in) (?P<value>.+)",
        rf"{_I_HAVE} (?:mostly |mainly |always )?(?:used|written|been (?:using|writing|"
        r"coding in)) (?P<value>.+)",
    ),
    "uses_tool": (
        r"i (?:mostly |mainly |primarily |usually |also |now )?use "
        r"(?P<value>.+)",
        rf"{_I_AM} (?:mostly |mainly |now )?using (?P<value>.+)",
        # "I've used Linux for a decade", "I've been using Arch since 2015".
        rf"{_I_HAVE} (?:mostly |mainly |always )?(?:used|been using) (?P<value>.+)",
        r"my (?:editor|ide|shell|browser|os|operating system|laptop|phone) is (?:an? )?"
        r"(?P<value>.+)",
    ),
    "prefers": (
        r"i (?:really |much |generally |usually |strongly |definitely |always )?prefer "
        r"(?P<value>.+)",
        r"my preference is (?:for )?(?P<value>.+)",
    ),
    "likes": (
        r"i (?:really |absolutely |truly )?(?:like|love|enjoy|adore) (?P<value>.+)",
        rf"{_I_AM} (?:really |so |totally |very |big |huge )?into (?P<value>.+)",
        rf"{_I_AM} (?:a )?(?:huge |big |massive |great )?fan of (?P<value>.+)",
    ),
    "dislikes": (
        rf"i (?:really |absolutely |truly )?(?:dislike|hate|detest|loathe|can{_APOS}t stand|"
        rf"cannot stand) (?P<value>.+)",
    ),
    "hobby": (
        r"my (?:hobby is|hobbies are|hobbies include|favou?rite (?:hobby|pastime) is) "
        r"(?P<value>.+)",
        r"in my (?:free|spare) time,? i (?P<value>.+)",
    ),
    **_FAVOURITE_PATTERNS,
    "diet": (
        rf"{_I_AM_WE_ARE} (?:a |an )?(?:strict |mostly |fully )?(?P<value>{_DIETS})"
        r"(?P<rest>(?:,| since | now| these days| too| and | btw| by the way| \().*)?",
        rf"(?:i|we) (?:eat|keep|follow) (?:a |an )?(?P<value>{_DIETS})(?: diet| food)?(?: only)?",
        rf"{_I_AM_WE_ARE} on (?:a |an )?(?P<value>{_DIETS}) diet",
        rf"{_I_HAVE} been (?:an? )?(?:strict )?(?P<value>{_DIETS})"
        r"(?P<rest>(?: for | since |,| now| btw).*)?",
        # "I went vegan last year": the diet from then on.
        rf"(?:i|we|{_I_HAVE}|{_WE_HAVE}) (?:went|gone|turned|became|become) "
        rf"(?P<value>{_DIETS}(?: (?:in|on|at|since|last|this|a|an|\d+) .+)?)",
    ),
    "allergic_to": (
        rf"{_I_AM} (?:very |severely |quite )?allergic to (?P<value>.+)",
        r"i have an? (?:severe |mild )?(?:\w+ )?allergy to (?P<value>.+)",
        r"i have an? (?:severe |mild )?(?P<value>[\w-]+) allergy",
    ),
}
# Predicates whose value is itself a date; validity starts at that date.
DATE_VALUED = frozenset({"born_on"})
# Predicates whose value is split on "and" and commas into one fact per item.
LIST_VALUED = frozenset(
    {"speaks", "allergic_to", "uses_language", "uses_tool", "hobby", "likes", "dislikes"}
)
# List predicates whose items are checked one by one against a known kind.
KIND_CHECKED = frozenset({"uses_language", "uses_tool"})
# Predicates whose value must be written as a proper name (after "the"): "I'm from the
# future" and "I was born in a hurry" name no place.
CAPITALISED = frozenset({"from", "born_in", "has_partner", "speaks", "native_language"})
# Words of a predicate's own patterns that would read as doubt anywhere else.
OWN_WORDS = {
    "lived_in": ("used to",),
    "worked_at": ("used to",),
    "dislikes": ("can't stand", "can\u2019t stand"),
    "favourite_music": ("kind of",),
}
# Predicates whose value is a name, which may be a hedge or negation word ("Will", "Noe").
NAME_VALUED = frozenset({"name", "has_partner"})

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
    "i'd",
    "i\u2019d",
    "i would",
    "wish",
    "want to",
    "wanna",
    "would love",
    "dream of",
    "hope",
    "pretty sure",
    "i feel like",
    "seems",
    "in theory",
    "allegedly",
    "they say",
    "i'm told",
    "i was told",
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
_LIKES_STOPS = (",", ";", ":", " but ", " because ")
VALUE_STOPS_BY_PREDICATE: dict[str, tuple[str, ...]] = {
    "likes": _LIKES_STOPS,
    "dislikes": _LIKES_STOPS,
}
for _name in ("speaks", "allergic_to", "hobby"):
    VALUE_STOPS_BY_PREDICATE[_name] = (";", ":", " but ", " because ", " since ", " now")
VALUE_STOPS_BY_PREDICATE["speaks"] = (
    *VALUE_STOPS_BY_PREDICATE["speaks"],
    *(" at ", " with ", " to ", " in ", " every", " fluently", " well", " a lot", " daily"),
)
for _name in _FAVOURITES:
    VALUE_STOPS_BY_PREDICATE[_name] = VALUE_STOPS_BY_PREDICATE["likes"]
_WHEN = (" for ", " from ", " until ", " when ", " while ", " during ", " before ", " after ")
VALUE_STOPS_BY_PREDICATE["lived_in"] = (*VALUE_STOPS, *_WHEN)
VALUE_STOPS_BY_PREDICATE["lives_in"] = (*VALUE_STOPS, *_WHEN, " on ")
VALUE_STOPS_BY_PREDICATE["worked_at"] = (*VALUE_STOPS, *_WHEN, " in ", " on ")
VALUE_STOPS_BY_PREDICATE["works_at"] = (*VALUE_STOPS, " on ", " since ", " from ")
# "I went vegan last spring": a phrase of time no date rule reads is not part of a diet.
VALUE_STOPS_BY_PREDICATE["diet"] = (*VALUE_STOPS, *(" in ", " on ", " at ", " last ", " this "))
VALUE_STOPS_BY_PREDICATE["job_title"] = (*VALUE_STOPS, " at ", " in ", " by ", " who ")
VALUE_STOPS_BY_PREDICATE["from"] = (*VALUE_STOPS, " originally")
VALUE_STOPS_BY_PREDICATE["name"] = (*VALUE_STOPS, " at ", " for short")
VALUE_STOPS_BY_PREDICATE["allergic_to"] = (
    *VALUE_STOPS_BY_PREDICATE["allergic_to"],
    *(", especially", ", mostly", " especially", " in spring", " in summer"),
)
VALUE_STOPS_BY_PREDICATE["prefers"] = (
    *(",", ";", ":", " but ", " because ", " since ", " whenever ", " when "),
    *(" over ", " rather than ", " instead of ", " to "),
)
_TOOL_STOPS: tuple[str, ...] = (
    ";",
    ":",
    " but ",
    " because ",
    " since ",
    " now",
    " at ",
    " for ",
    " in ",
)
_TOOL_STOPS += (" to ", " every", " daily", " on ", " most ", " all ", " when ", " as ")
_TOOL_STOPS += (" mostly", " mainly", " professionally", " a lot", " these days")
VALUE_STOPS_BY_PREDICATE["uses_language"] = _TOOL_STOPS
VALUE_STOPS_BY_PREDICATE["uses_tool"] = _TOOL_STOPS

# Chat fillers after a value are no part of it: "I'm allergic to peanuts though".
FILLERS = (
    " btw",
    " by the way",
    " tho",
    " though",
    " anyway",
    " actually",
    " of course",
    " obviously",
    " lol",
    " haha",
    " fyi",
    " finally",
    " at all",
    " myself",
    " so ",
    " (",
)
# Capitalised words after "I'm" that name no person: "I'm German", "I'm OK".
NOT_NAMES = frozenset(
    [
        "american",
        "australian",
        "austrian",
        "belgian",
        "brazilian",
        "british",
        "canadian",
        "chinese",
        "danish",
        "dutch",
        "english",
        "finnish",
        "french",
        "german",
        "greek",
        "indian",
        "irish",
        "italian",
        "japanese",
        "korean",
        "mexican",
        "nigerian",
        "norwegian",
        "polish",
        "portuguese",
        "russian",
        "scottish",
        "spanish",
        "swedish",
        "swiss",
        "turkish",
        "ukrainian",
        "welsh",
        "european",
        "african",
        "asian",
        "latino",
        "latina",
        "jewish",
        "muslim",
        "catholic",
        "christian",
        "hindu",
        "buddhist",
        "ok",
        "okay",
        "fine",
        "good",
        "great",
        "sorry",
        "back",
        "here",
        "home",
        "done",
        "new",
        "happy",
        "glad",
        "sure",
        "free",
        "busy",
        "ready",
        "same",
        "me",
        "everyone",
        "nobody",
        "anyone",
        "someone",
        "newbie",
        "noob",
        "mr",
        "mrs",
        "ms",
        "mx",
        "dr",
        "prof",
    ]
)
# Words that point elsewhere instead of naming a value: "I live there" says nothing.
VAGUE_VALUES = frozenset(
    {"it", "there", "here", "them", "that", "this", "him", "her", "you", "one", "home"}
)

# A value that starts with one of these points at something else too.
POINTING_WORDS = VAGUE_VALUES - {"one"} | {"when", "what", "how", "us", "everyone", "your"}

# Chat leaves the subject out ("based in Oslo", "mostly write Go", "allergic to cats"):
# a clause opening with one of these verbs is read with the subject it implies. Verbs that
# also open a request, a thanks or an aside ("like I said", "love the idea") are not
# among them.
IMPLIED_SUBJECTS: tuple[tuple[str, str], ...] = (
    (
        r"(?:based|living|staying|settled|allergic|originally from|into|big into|really into|"
        r"(?:a )?(?:huge |big )?fan of|married to|fluent in|working (?:at|for)|employed)",
        "i'm ",
    ),
    (rf"(?:an? )?(?:strict )?{_DIETS}", "i'm "),
    (
        r"(?:live in|work (?:at|for|as)|worked (?:at|for)|used to (?:live|work)|grew up|"
        # "moved to the next chapter", "hate to ask", "write python for me", "dislike
        # button": figures of speech and requests, not the user's facts.
        r"(?:moved|relocated) to (?!the\b|a\b|an\b|my\b)|speak|prefer|hate(?! to\b)|loathe|"
        rf"detest|can{_APOS}t stand|(?:mostly |mainly |usually |also )(?:write|use)|"
        r"(?:mostly |mainly |usually |also )?(?:code in|program in)|"
        r"(?:just )?(?:joined|started at|started working|landed|got a (?:new )?job)|"
        r"come from|was born|wear|rely on|teach (?:at|in))",
        "i ",
    ),
    (r"been", "i've "),
    (r"(?:fave?|favou?rite) \w+ is", "my "),
)

RULES_VERSION = "v3"


def _rules_hash() -> str:
    rules = {
        "lead": _LEAD,
        "predicates": {name: [cardinality_of(name), PATTERNS[name]] for name in PATTERNS},
        "date_valued": sorted(DATE_VALUED),
        "list_valued": sorted(LIST_VALUED),
        "kind_checked": sorted(KIND_CHECKED),
        "capitalised": sorted(CAPITALISED),
        "own_words": OWN_WORDS,
        "sentences": _SENTENCE_RE.pattern,
        "clauses": _CLAUSE_SPLIT_RE.pattern,
        "openings": _OPENINGS.pattern,
        "name_valued": sorted(NAME_VALUED),
        "languages": sorted(LANGUAGES),
        "lower_case_tools": sorted(LOWER_CASE_TOOLS),
        "hedges": HEDGES,
        "negations": NEGATIONS,
        "future": FUTURE,
        "vague": sorted(VAGUE_VALUES),
        "pointing": sorted(POINTING_WORDS),
        "stops": VALUE_STOPS,
        "stops_by_predicate": VALUE_STOPS_BY_PREDICATE,
        "fillers": FILLERS,
        "not_names": sorted(NOT_NAMES),
        "fronted": _FRONTED_RE.pattern,
        "front_only": _FRONT_ONLY_RE.pattern,
        "question_tail": _QUESTION_TAIL_RE.pattern,
        "implied_subjects": IMPLIED_SUBJECTS,
        "alongside": [
            _JOB_ONLY_RE.pattern,
            _PRONOUNS_ONLY_RE.pattern,
            _LOWER_NAME_RE.pattern,
            _AS_JOB_RE.pattern,
            _WITH_PARTNER_RE.pattern,
        ],
        "lists": [_AS_WELL_AS_RE.pattern, _COMMA_LIST_RE.pattern],
        "dates": DATE_PATTERNS,
    }
    canonical = json.dumps(rules, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


CARDINALITY = {predicate: cardinality_of(predicate) for predicate in PATTERNS}
# Every pattern opens with one of these (after the lead words), or is a value-first
# favourite ("Blue is my favourite colour"): a clause that matches none is skipped without
# trying each pattern, which keeps a message of many clauses quick to read.
_OPENINGS = re.compile(
    _LEAD + rf"(?:i\b|i{_APOS}|im\b|ive\b|my\b|we\b|we{_APOS}|just\b|call me\b|people call\b|"
    rf"everyone calls\b|"
    rf"in my\b|.+ is {_FAV}\b)",
    re.IGNORECASE,
)
_PATTERNS = tuple(
    (predicate, re.compile(_LEAD + pattern + r"$", re.IGNORECASE))
    for predicate, patterns in PATTERNS.items()
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
_SENTENCE_RE = re.compile(r"[^.!?\u3002\uff01\uff1f\n]+(?:[.!?\u3002\uff01\uff1f]+|(?=\n)|$)")
_THIRD_TAIL = (
    rf"(?:{_APOS}s|{_APOS}re)?\b(?!/)(?!\s+(?:says?|said|told|tells|thinks?|reckons?|claims?|"
    r"believes?|seems?|seemed|heard)\b)"
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*;\s*|:\s+|,?\s+(?:and|but|plus|also|so)\s+(?=(?:i|i'm|i've|my|we)\b)"
    rf"|,\s+(?=(?:my|i{_APOS}m|i am|i{_APOS}ve|we|we{_APOS}re|we{_APOS}ve)\b)"
    # ", I wear hearing aids": a new subject, but not "…, I guess" (a hedge of the first).
    r"|,\s+(?=i\s+(?!guess|think|believe|suppose|hope|mean|wish|feel|reckon|know)\w)"
    # "…, she might like it too", "… but that's not …": someone or something else's clause,
    # whose doubt is not the first one's; "…, they say" stays (a hedge of the first).
    rf"|(?:,\s+|,?\s+(?:and|but|so)\s+)(?=(?:he|she|they|it|that){_THIRD_TAIL})",
    re.IGNORECASE,
)
# "I love bouldering, is there a gym near me?": the statement before the question stands.
_QUESTION_TAIL_RE = re.compile(
    r",\s+(?=(?:is|are|do|does|can|could|would|will|what|where|when|how|which|who|any|"
    r"should|help|pls|please)\b)",
    re.IGNORECASE,
)
# A piece that is only a phrase of time, split off before its clause's subject.
_FRONT_ONLY_RE = re.compile(
    r"^[^\w]*(?:since|in|last|this|after|before|for|from|back in|until|over|as of)\b[^,]{0,40}$",
    re.IGNORECASE,
)
# "Since last spring, I've lived in Oslo": a phrase of time before the subject.
_FRONTED_RE = re.compile(
    r"^(?P<front>(?:since|in|last|this|after|before|for|from|back in|until|over|as of)\b"
    rf"[^,]{{0,40}}?),?\s+(?=(?:i|we|i{_APOS}\w+|we{_APOS}\w+)\b)",
    re.IGNORECASE,
)
# Full stops, exclamation and question marks, ASCII and full-width.
_TERMINALS = ".!?\u3002\uff01\uff1f"
_ARTICLE_RE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_LEAD_RE = re.compile(_LEAD, re.IGNORECASE)
# "X as well as Y" lists two items, as "X and Y" does.
_AS_WELL_AS_RE = re.compile(r" as well as (?=\w)")
# A list of short items closed by "and" or "or": "prints, linocuts and old maps".
_COMMA_LIST_RE = re.compile(r"^[^,;:]{1,40}(?:,\s*[^,;:]{1,40}?)+,?\s+(?:and|or|&)\s+[^,;:]+")
_IMPLIED_RES = tuple(
    (re.compile(opening + r"\b", re.IGNORECASE), subject) for opening, subject in IMPLIED_SUBJECTS
)
# "a history teacher", "QA engineer", "freelance illustrator at a studio": a job alone.
_JOB_ONLY_RE = re.compile(
    rf"^(?:an? )?(?:[\w-]+ ){{0,3}}?{_JOBS}(?: (?:at|for|in|with|on) .+)?$", re.IGNORECASE
)
_PRONOUNS_ONLY_RE = re.compile(r"^(?P<value>[a-z]+/[a-z]+(?:/[a-z]+)?)(?: pronouns)?$", re.I)
_LOWER_NAME_RE = re.compile(rf"^{_I_AM} (?P<value>[a-z][a-z'\u2019-]+)(?P<rest>,.+)$")
_INTRO_REST_RE = re.compile(rf"^{_LEAD}{_I_AM} {_NAME}(?P<rest>,.+)$", re.IGNORECASE)
_AS_JOB_RE = re.compile(rf"\bas (?P<value>(?:an? )?(?:[\w-]+ ){{0,3}}?{_JOBS})\b", re.IGNORECASE)
_WITH_PARTNER_RE = re.compile(
    r"\bwith (?P<phrase>my (?:wife|husband|partner|spouse|girlfriend|boyfriend|"
    rf"fianc[ée]e?) {_CAP}[\w'\u2019-]*)",
    re.IGNORECASE,
)

EXTRACTOR_VERSION = f"extract/{RULES_VERSION}:{_rules_hash()}"


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
        terminal = stripped[len(stripped.rstrip(_TERMINALS)) :]
        start = sentence.start()
        cursor = 0
        core = stripped[: len(stripped) - len(terminal)]
        # In a question, the statement before ", is there ..." keeps a full stop.
        tail = _QUESTION_TAIL_RE.search(core) if "?" in terminal else None
        statement_end = tail.start() if tail else -1
        pieces = []
        for split in _CLAUSE_SPLIT_RE.finditer(core):
            pieces.append((cursor, split.start()))
            cursor = split.end()
        pieces.append((cursor, len(core)))
        # "Since last spring, I've lived in Oslo": the phrase of time stays with its clause.
        for index in range(len(pieces) - 2, -1, -1):
            piece = core[pieces[index][0] : pieces[index][1]].lstrip()
            # "Actually, I live in Aarhus": lead words alone stay with their clause too.
            if _FRONT_ONLY_RE.match(piece) or _LEAD_RE.fullmatch(piece + " "):
                pieces[index : index + 2] = [(pieces[index][0], pieces[index + 1][1])]
        if tail:
            pieces = [
                part
                for a, b in pieces
                for part in (
                    ((a, tail.start()), (tail.end(), b)) if a < tail.start() < b else ((a, b),)
                )
            ]
        for piece_start, piece_end in pieces:
            piece = core[piece_start:piece_end]
            # A clause starts at its first letter or digit: emoji, bullets and
            # spaces before it are not part of any quote.
            lead = 0
            while lead < len(piece) and not piece[lead].isalnum():
                lead += 1
            # Emoji and other symbols after it are not either.
            trail = len(piece.rstrip())
            while trail > lead and unicodedata.category(piece[trail - 1])[0] in "SZ":
                trail -= 1
            if trail > lead:
                closing = "." if piece_end <= statement_end else terminal
                spans.append(
                    (start + piece_start + lead, start + piece_start + trail, closing, start)
                )
    return spans


def _cut_value(value: str, predicate: str) -> tuple[str, str]:
    """Split the captured tail into the value and the qualifying words after it."""
    stops = (*(VALUE_STOPS_BY_PREDICATE.get(predicate) or VALUE_STOPS), *FILLERS)
    lowered = value.lower()
    if predicate in LIST_VALUED:
        # "Gaelic as well as English": two items, and no "well" cuts the first.
        lowered = _AS_WELL_AS_RE.sub(lambda m: " " * len(m.group(0)), lowered)
        closing = re.search(r"\s(?:and|or|&)\s", lowered)
        comma = lowered.find(",", closing.end()) if closing else -1
        if comma > 0 and ";" in stops:
            # "climbing and knitting, weirdly…": the comma after a closed list ends it.
            lowered = lowered[:comma] + ";" + lowered[comma + 1 :]
        listed = _COMMA_LIST_RE.match(lowered)
        if listed is not None and "," in stops:
            # "I love prints, linocuts and old maps": a list closed by "and" holds its commas.
            stops = tuple(stop for stop in stops if stop != ",")
            lowered = lowered[: listed.end()] + lowered[listed.end() :].replace(",", ";", 1)
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
    parts = re.split(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s+as well as\s+|\s*&\s*", value)
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
        quoted ^= sum(map(text.count, _QUOTE_MARKS, repeat(quotes_counted), repeat(start))) % 2 == 1
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
        if "?" in terminal or "\uff1f" in terminal or doubted or quoted:
            continue
        clause = text[start:end]
        bytes_seen += len(text[chars_seen:start].encode("utf-8"))
        chars_seen = start
        found.extend(_read_clause(clause, bytes_seen, terminal, occurred_at))
    return found


def _read_clause(
    clause: str, byte_start: int, terminal: str, occurred_at: datetime
) -> list[Extraction]:
    """The facts of the first pattern that reads the clause, or none.

    The clause is read whole first ("In my free time I paint" is a pattern of its own),
    then, if it opens with a phrase of time, from its subject on.
    """
    if _FUTURE_RE.search(clause):
        return []
    facts = _read_from(clause, byte_start, terminal, occurred_at)
    if not facts:
        facts = _read_implied(clause, byte_start, terminal, occurred_at)
    if facts:
        return facts + _read_alongside(clause, byte_start, terminal, occurred_at, facts)
    fronted = _FRONTED_RE.match(clause)
    if fronted is None:
        return _read_introduction(clause, byte_start, terminal, occurred_at)
    body = clause[fronted.end() :]
    facts = _read_from(body, byte_start, terminal, occurred_at)
    if not facts:
        return []
    return _with_front(facts, clause, byte_start, terminal, fronted.group("front"))


def _read_implied(
    clause: str, byte_start: int, terminal: str, occurred_at: datetime
) -> list[Extraction]:
    """A statement whose subject chat leaves out: "based in Oslo", "mostly write Go".

    The clause is read with the subject its opening verb implies (IMPLIED_SUBJECTS) put
    back; the quote stays the clause as written.
    """
    lead = _LEAD_RE.match(clause)
    body = clause[lead.end() :] if lead else clause
    for opening, subject in _IMPLIED_RES:
        if opening.match(body):
            facts = _read_from(subject + body, byte_start, terminal, occurred_at)
            return _requoted(facts, clause, byte_start, terminal)
    return []


def _read_introduction(
    clause: str, byte_start: int, terminal: str, occurred_at: datetime
) -> list[Extraction]:
    """ "im nadia, freelance illustrator": a name written in lower case, with a job after it.

    Nothing else tells "im nadia" from "im tired" ("Still here" and "Same here" are why
    "<Name> here" is no introduction either).
    """
    lower = _LOWER_NAME_RE.match(clause)
    if lower is None:
        return []
    jobs = _read_pieces(lower.group("rest"), byte_start, terminal, occurred_at, clause)
    if not any(fact.predicate == "job_title" for fact in jobs):
        return []
    name = _read_from(f"my name is {lower.group('value')}", byte_start, ".", occurred_at)
    return _requoted(name, clause, byte_start, terminal) + jobs


def _read_alongside(
    clause: str,
    byte_start: int,
    terminal: str,
    occurred_at: datetime,
    facts: list[Extraction],
) -> list[Extraction]:
    """Facts stated alongside the clause's own: "I'm Tane, 28, live in Wellington" (the
    pieces after an introduced name), "I work for Atlassian as a QA engineer" (a job
    after an employer), "I live in Inverness with my wife Morag" (a partner by name).
    """
    found: list[Extraction] = []
    predicates = {fact.predicate for fact in facts}
    if predicates == {"name"}:
        intro = _INTRO_REST_RE.match(clause)
        if intro is not None:
            found += _read_pieces(intro.group("rest"), byte_start, terminal, occurred_at, clause)
    if "works_at" in predicates and "job_title" not in predicates:
        job = _AS_JOB_RE.search(clause)
        if job is not None:
            read = _read_from(f"i work as {job.group('value')}", byte_start, ".", occurred_at)
            found += _requoted(read, clause, byte_start, terminal)
    if "has_partner" not in predicates:
        partner = _WITH_PARTNER_RE.search(clause)
        if partner is not None:
            read = _read_from(partner.group("phrase"), byte_start, ".", occurred_at)
            found += _requoted(read, clause, byte_start, terminal)
    return [fact for fact in found if fact.predicate not in predicates]


def _read_pieces(
    rest: str, byte_start: int, terminal: str, occurred_at: datetime, clause: str
) -> list[Extraction]:
    """Each comma piece of an introduction's rest, read as a job or a subjectless clause."""
    found: list[Extraction] = []
    for piece in rest.split(","):
        piece = piece.strip()
        if not piece:
            continue
        if _PRONOUNS_ONLY_RE.match(piece):
            pronouns = _PRONOUNS_ONLY_RE.match(piece)
            assert pronouns is not None
            read = _read_from(
                f"my pronouns are {pronouns.group('value')}", byte_start, ".", occurred_at
            )
        elif _JOB_ONLY_RE.match(piece):
            article = "" if re.match(r"an? ", piece, re.IGNORECASE) else "a "
            read = _read_from(f"i am {article}{piece}", byte_start, ".", occurred_at)
        else:
            read = _read_implied(piece, byte_start, ".", occurred_at)
        found += _requoted(read, clause, byte_start, terminal)
    return found


def _requoted(
    facts: list[Extraction], clause: str, byte_start: int, terminal: str
) -> list[Extraction]:
    """Facts read from a rewording of ``clause``, quoting the clause as written."""
    end = byte_start + len(clause.encode("utf-8"))
    statement = clause + (terminal.strip()[:1] or ".")
    return [
        replace(fact, quote=clause, statement=statement, byte_start=byte_start, byte_end=end)
        for fact in facts
    ]


def _read_from(
    clause: str, byte_start: int, terminal: str, occurred_at: datetime
) -> list[Extraction]:
    if not _OPENINGS.match(clause):
        return []
    for predicate, pattern in _PATTERNS:
        match = pattern.match(clause)
        if match is None:
            continue
        facts = _facts_from(clause, byte_start, terminal, predicate, match, occurred_at)
        if facts:
            return facts
    return []


def _with_front(
    facts: list[Extraction], clause: str, byte_start: int, terminal: str, front: str
) -> list[Extraction]:
    """Facts read after a fronted phrase ("Since last spring, I've lived in Oslo").

    The quote is the whole clause; a date the phrase names starts the validity when the
    rest named none; a hedge or negation in it voids the clause.
    """
    if _HEDGE_RE.search(front) or _NEGATION_RE.search(front):
        return []
    occurred_at = facts[0].valid_from if facts[0].valid_precision == "instant" else None
    start, precision = None, ""
    if occurred_at is not None and facts[0].predicate not in DATE_VALUED:
        try:
            date = find_trailing_date(front, occurred_at)
        except UnusableDate:
            return []
        if date is not None and date.phrase_start == 0:
            start, precision = date.at, date.precision
    end = byte_start + len(clause.encode("utf-8"))
    statement = clause + (terminal.strip()[:1] or ".")
    return [
        replace(
            fact,
            quote=clause,
            statement=statement,
            byte_start=byte_start,
            byte_end=end,
            valid_from=start or fact.valid_from,
            valid_precision=precision or fact.valid_precision,
        )
        for fact in facts
    ]


def _facts_from(
    clause: str,
    byte_start: int,
    terminal: str,
    predicate: str,
    match: re.Match[str],
    occurred_at: datetime,
) -> list[Extraction]:
    read = _read_value(clause, predicate, match, occurred_at)
    if read is None:
        return []
    value, valid_from, precision = read
    items = _split_list(value) if predicate in LIST_VALUED else [value]
    items = [item for item in items if value_key(item)]
    if predicate in KIND_CHECKED and len(items) > 1 and _items_fit(predicate, items[:1]):
        # "I mostly write Go, some Python": the items of the kind stand.
        items = [item for item in items if _items_fit(predicate, [item])]
    if not items or not _items_fit(predicate, items):
        return []
    byte_end = byte_start + len(clause.encode("utf-8"))
    statement = clause + (terminal.strip()[:1] or ".")
    return [
        Extraction(
            predicate=predicate,
            cardinality=CARDINALITY[predicate],
            value=item,
            value_key=value_key(item),
            statement=statement,
            quote=clause,
            byte_start=byte_start,
            byte_end=byte_end,
            valid_from=valid_from,
            valid_precision=precision,
        )
        for item in items
    ]


def _read_value(
    clause: str, predicate: str, match: re.Match[str], occurred_at: datetime
) -> tuple[str, datetime, str] | None:
    """The value, with the start of its validity and that start's precision."""
    raw = match.group("value")
    try:
        # A birthday names a day of every year, not the day the fact began.
        date = None if predicate == "birthday" else find_trailing_date(raw, occurred_at)
    except UnusableDate:
        return None
    if predicate in DATE_VALUED:
        if date is None or date.phrase_start != 0:
            return None
        value, rest = raw, ""
    else:
        if date is not None:
            raw = raw[: date.phrase_start].rstrip()
        value, rest = _cut_value(raw.strip(), predicate)
        if date is not None:
            rest += " " + match.group("value")[date.phrase_start :]
    if _doubted(clause, predicate, match, value, rest):
        return None
    value = value.strip().strip("\"'\u201c\u201d\u2018\u2019").strip()
    key = value_key(value)
    if not value or len(value) > 120 or key in VAGUE_VALUES:
        return None
    if key.split(" ", 1)[0] in POINTING_WORDS:
        # "I love you guys", "I hate it when that happens": about someone or something
        # else, not a value of the user's.
        return None
    valid_from, precision = occurred_at, "instant"
    if date is not None:
        valid_from, precision = date.at, date.precision
    return _normalised(predicate, value, valid_from, precision, occurred_at)


def _doubted(clause: str, predicate: str, match: re.Match[str], value: str, rest: str) -> bool:
    """A hedge or negation outside the value, or inside it (a name may be "Will")."""
    before = clause[: match.start("value")]
    for words in OWN_WORDS.get(predicate, ()):
        before = before.lower().replace(words, "")
    outside = " ".join((before, clause[match.end("value") :], rest))
    if _HEDGE_RE.search(outside) or _NEGATION_RE.search(outside):
        return True
    if _NEGATION_RE.search(value):
        return True
    return predicate not in NAME_VALUED and bool(_HEDGE_RE.search(value))


def _normalised(
    predicate: str, value: str, valid_from: datetime, precision: str, occurred_at: datetime
) -> tuple[str, datetime, str] | None:
    """Date-valued predicates store the date itself: MM-DD for a birthday, ISO for a birth."""
    if predicate == "birthday":
        birthday: ResolvedDate | None
        try:
            # A leap year, so that 29 February is a birthday too.
            birthday = find_trailing_date(
                "on " + value, occurred_at.replace(year=2024, month=12, day=31)
            )
        except UnusableDate:
            return None
        if birthday is None or birthday.precision != "day" or birthday.phrase_start != 0:
            return None
        return birthday.at.strftime("%m-%d"), valid_from, precision
    if predicate in DATE_VALUED:
        value = valid_from.date().isoformat()
        value = {"year": value[:4], "month": value[:7]}.get(precision, value)
    return value, valid_from, precision


def _items_fit(predicate: str, items: list[str]) -> bool:
    """Values of the kind the predicate takes: a known language, a named tool, a place."""
    if predicate == "uses_language":
        return all(item.casefold() in LANGUAGES for item in items)
    if predicate == "uses_tool":
        return all(
            item.casefold() not in LANGUAGES
            and (item[:1].isupper() or item.casefold() in LOWER_CASE_TOOLS)
            for item in items
        )
    if predicate in NAME_VALUED and any(
        word in NOT_NAMES for item in items for word in value_key(item).split()
    ):
        return False
    if predicate in CAPITALISED:
        return all(_ARTICLE_RE.sub("", item)[:1].isupper() for item in items)
    return True


@dataclass(frozen=True)
class Correction:
    """A message saying an earlier fact was wrong: "I meant pecans, not peanuts".

    ``predicate`` is empty when the message names none (the corrected fact's is taken);
    ``mistaken`` is the ``value_key`` of the wrong value, empty when the message does not
    name it ("actually, make that sage green": the latest fact is the one meant).
    ``dated`` says whether the message gave the replacement a start of its own.
    """

    predicate: str
    value: str
    value_key: str
    mistaken: str
    statement: str
    quote: str
    byte_start: int
    byte_end: int
    valid_from: datetime
    valid_precision: str
    dated: bool


@dataclass(frozen=True)
class Reading:
    """What a message says: facts, and corrections of facts earlier messages gave."""

    facts: list[Extraction]
    corrections: list[Correction]


# Opening words of a correction: "wait, I meant pecans", "sorry, make that sage green".
_CORRECTION_LEAD = (
    r"^(?:(?:so|well|oh|oops|sorry|wait|no|ah|actually|correction|my bad|my mistake|"
    r"i mean),?\s+)*"
)
_NOT_TAIL = r",?\s+(?:actually,?\s+)?(?:not|rather than|instead of)\s+(?P<wrong>[^,]+?)"
# "I meant pecans, not peanuts"; "make that sage green": a value put in a wrong one's place.
_CORRECTIONS = tuple(
    re.compile(_CORRECTION_LEAD + pattern + "$", re.IGNORECASE)
    for pattern in (
        rf"i meant (?P<value>[^,]+?)(?:{_NOT_TAIL}(?P<after>,.*)?)?",
        rf"(?:make|change) (?:that|it) (?:to )?(?P<value>[^,]+?)(?:{_NOT_TAIL})?(?P<rest>,.*)?",
    )
)
# "I live in Porto, not Lisbon", "I'm in Bangalore actually, not Chennai".
_FACT_THEN_NOT = re.compile(r"^(?P<fact>.+?)(?:\s+actually)?" + _NOT_TAIL + "$", re.IGNORECASE)
_ACTUALLY_FIRST = re.compile(r"^actually,?\s+", re.IGNORECASE)


def read(text: str, *, occurred_at: datetime) -> Reading:
    """The facts and the corrections in ``text``, a message sent at ``occurred_at``.

    A clause that corrects ("I meant X, not Y", "actually, make that X", "actually I live
    in X", "I live in X, not Y") gives a correction instead of a fact; the corrected fact
    is found among the subject's earlier facts (``correction_target``).
    """
    facts: list[Extraction] = []
    corrections: list[Correction] = []
    corrected: set[tuple[int, int]] = set()
    for start, end, terminal, byte_start in _statement_clauses(text):
        correction = _read_correction(text[start:end], byte_start, terminal, occurred_at)
        if correction is not None:
            corrections.append(correction)
            corrected.add((correction.byte_start, correction.byte_end))
    for fact in extract(text, occurred_at=occurred_at):
        if (fact.byte_start, fact.byte_end) not in corrected:
            facts.append(fact)
    return Reading(facts, corrections)


def _statement_clauses(text: str) -> list[tuple[int, int, str, int]]:
    """Clauses no question, quotation or doubt rules out, with their UTF-8 byte start."""
    out = []
    for start, end, terminal, _sentence in _clauses(text):
        if "?" in terminal or "\uff1f" in terminal:
            continue
        prefix = text[:start]
        if sum(prefix.count(mark) for mark in _QUOTE_MARKS) % 2:
            continue
        out.append((start, end, terminal, len(prefix.encode("utf-8"))))
    return out


def _read_correction(
    clause: str, byte_start: int, terminal: str, occurred_at: datetime
) -> Correction | None:
    statement = clause + (terminal.strip()[:1] or ".")
    end = byte_start + len(clause.encode("utf-8"))
    for pattern in _CORRECTIONS:
        match = pattern.match(clause)
        if match is None:
            continue
        value = match.group("value").strip()
        wrong = match.group("wrong") or ""
        if not value_key(value) or _HEDGE_RE.search(value) or _NEGATION_RE.search(value):
            return None
        return Correction(
            "", value, value_key(value), value_key(wrong), statement, clause,
            byte_start, end, occurred_at, "instant", False,
        )  # fmt: skip
    fact_then_not = _FACT_THEN_NOT.match(clause)
    actually = _ACTUALLY_FIRST.match(clause)
    if fact_then_not is None and actually is None:
        return None
    body = fact_then_not.group("fact") if fact_then_not else clause
    wrong = fact_then_not.group("wrong") if fact_then_not else ""
    facts = _read_clause(body, byte_start, ".", occurred_at)
    if len(facts) != 1 or (not wrong and facts[0].cardinality != "one"):
        # Only a functional fact says which earlier fact "actually" replaces.
        return None
    fact = facts[0]
    return Correction(
        fact.predicate, fact.value, fact.value_key, value_key(wrong), statement, clause,
        byte_start, end, fact.valid_from, fact.valid_precision,
        fact.valid_precision != "instant",
    )  # fmt: skip


def correction_target(correction: Correction, believed: list[tuple[str, str]]) -> int | None:
    """Which believed fact, given as (predicate, value_key) oldest first, is corrected.

    The newest fact with the wrong value the correction names (of its predicate, when it
    has one); with no wrong value named, the newest fact of its predicate, or the newest
    fact of all for "I meant X". None when nothing fits or the value is already believed.
    """
    for index in range(len(believed) - 1, -1, -1):
        predicate, key = believed[index]
        if correction.predicate and predicate != correction.predicate:
            continue
        if key == correction.value_key:
            return None
        if not correction.mistaken or key == correction.mistaken:
            return index
    return None


def statements(text: str, *, occurred_at: datetime) -> dict[tuple[int, int], tuple[str, str]]:
    """Each statement the rules read in ``text`` by its byte span: (statement, value)."""
    reading = read(text, occurred_at=occurred_at)
    found = {(f.byte_start, f.byte_end): (f.statement, f.value) for f in reading.facts}
    for c in reading.corrections:
        found[(c.byte_start, c.byte_end)] = (c.statement, c.value)
    return found
