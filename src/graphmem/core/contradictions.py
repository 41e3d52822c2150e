"""Whether a new fact probably contradicts a current fact of the same entity: precision first.

Three rules, each for what one entity cannot hold twice at once; two facts that merely share
words ("Likes tea", "Likes coffee"; "Visited Paris in 2019", "Visited Paris in 2021") match none:

- **another value**: both name one value of a single-valued attribute, with different values:
  "Works at Acme" / "Works at Initech", "Lives in Paris" / "She lives in Berlin", "The deadline
  is March 3" / "The deadline is April 1". The attributes are a list of what a person or a thing
  has one of at a time (employer, home, spouse, birthday, email, deadline, version...);
- **a negation**: the same statement, one side negated: "Eats fish" / "Does not eat fish",
  "Is vegetarian" / "Is no longer vegetarian";
- **a changed number or date**: the same statement of a state (is, has, costs, version, age...)
  with another number or date: "The team has 12 people" / "The team has 15 people".

Facts that say when they happened (a `[2024-03-01]` prefix) or hold (their valid times do not
meet) are about different times, and contradict nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Clash", "Contradiction", "contradiction"]


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Why two facts probably contradict: the rule, and what they disagree on."""

    rule: str
    """`another value`, `a negation` or `a changed number`."""
    about: str
    """What the two facts disagree on: the attribute (`works at`), or the statement."""


@dataclass(frozen=True, slots=True)
class Clash:
    """A new fact of an entity and a current one it may contradict (by its id), and why."""

    new: str
    fact_id: str
    fact: str
    rule: str
    about: str


_DATED = re.compile(r"\s*\[\d{4}-\d{2}")
_WORD = re.compile(r"\d+(?:[.,:/-]\d+)*(?:st|nd|rd|th)?|[^\W\d_]+(?:['’][^\W\d_]+)?")
_NUMBER = re.compile(r"\d")
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)

# Single-valued attributes as the words that name them, longest first where one starts another.
# Each is followed by its value: the words after it, to the end of the fact or a comma.
_FUNCTIONAL = tuple(
    phrase.split()
    for phrase in (
        "works at",
        "works for",
        "is employed by",
        "employed by",
        "employer is",
        "works as",
        "job title is",
        "title is",
        "role is",
        "lives in",
        "lives at",
        "resides in",
        "home is in",
        "is based in",
        "based in",
        "is headquartered in",
        "headquartered in",
        "is married to",
        "married to",
        "spouse is",
        "wife is",
        "husband is",
        "was born in",
        "was born on",
        "born in",
        "born on",
        "birthday is",
        "date of birth is",
        "reports to",
        "manager is",
        "is managed by",
        "email is",
        "email address is",
        "phone is",
        "phone number is",
        "address is",
        "timezone is",
        "time zone is",
        "deadline is",
        "is due on",
        "due date is",
        "status is",
        "version is",
        "price is",
        "budget is",
        "salary is",
        "capital is",
        "favourite colour is",
        "favorite color is",
        "favourite color is",
        "favorite colour is",
        "name is",
        "owner is",
        "is owned by",
        "owned by",
        "located in",
        "is located in",
        "runs on",
    )
)

_NEGATIONS = frozenset({"not", "never", "no", "n't", "nothing", "none"})
_AUXILIARIES = frozenset(
    {"do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "can", "will", "would"}
)
_CONTRACTED = re.compile(r"(\w)n['’]t\b|\b(can)not\b")

# Words that make a statement one of a state, which a changed number contradicts.
_STATE_WORDS = frozenset(
    "is are was has have costs cost weighs age aged old version price budget deadline due count "
    "size capacity population salary rate limit timeout port height weight headcount employees people "
    "members staff users score rank level".split()
)


def _words(text: str) -> list[str]:
    return _WORD.findall(_CONTRACTED.sub(lambda match: f"{match.group(1) or match.group(2)} n't", text.lower()))


def _stem(word: str) -> str:
    """A verb's third person and a plural folded to the base, crudely: eats, eat; likes, like."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


_BY_FIRST_WORD: dict[str, list[tuple[str, ...]]] = {}
for _phrase in _FUNCTIONAL:
    _BY_FIRST_WORD.setdefault(_phrase[0], []).append(tuple(_phrase))
_SUBJECT_WORDS = frozenset({"she", "he", "they", "it", "i", "we", "also", "now", "currently", "still"})


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the rules read of one fact, read once (`_shape`, cached)."""

    dated: bool
    words: tuple[str, ...]
    attributes: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]]
    """Each single-valued attribute the fact names: (what comes before it, its value)."""
    negated: bool
    statement: tuple[str, ...]
    """The words without negation and auxiliaries, stemmed."""
    skeleton: tuple[str, ...]
    numbers: tuple[str, ...]


@lru_cache(maxsize=65_536)
def _shape(text: str) -> _Shape:
    words = tuple(_words(text))
    attributes: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for start, word in enumerate(words):
        for phrase in _BY_FIRST_WORD.get(word, ()):
            end = start + len(phrase)
            if words[start:end] == phrase and end < len(words) and phrase not in attributes:
                before = tuple(w for w in words[:start] if w not in _SUBJECT_WORDS)
                attributes[phrase] = (before, words[end:])
    negated, statement = _negated(words)
    skeleton, numbers = _skeleton(words)
    return _Shape(bool(_DATED.match(text)), words, attributes, negated, statement, skeleton, numbers)


def _dated(word: str) -> bool:
    """Whether a value's first word is a number or a date (a year, a day, a month)."""
    return bool(_NUMBER.search(word)) or word in _MONTHS


def _same_value(one: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """Values that may well be one: equal, one the start of the other ("Acme", "Acme Corp")."""
    shorter, longer = sorted((one, other), key=len)
    return longer[: len(shorter)] == shorter


def _another_value(a: _Shape, b: _Shape) -> Contradiction | None:
    # The longest attribute both name decides ("works at" before "at").
    for phrase in sorted(a.attributes.keys() & b.attributes.keys(), key=len, reverse=True):
        (a_before, first), (b_before, second) = a.attributes[phrase], b.attributes[phrase]
        # What comes before the attribute names whose it is ("her manager is", "her sister's
        # manager is"): the two must agree on it.
        if a_before != b_before or _same_value(first, second) or _dated(first[0]) != _dated(second[0]):
            return None  # someone else's, one value, or two of different kinds (born in 1815, in London)
        return Contradiction("another value", " ".join(phrase))
    return None


def _negated(words: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    """Whether the statement is negated, and its words without the negation (stemmed)."""
    negated = False
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "no" and index + 1 < len(words) and words[index + 1] == "longer":
            negated = True
            index += 2
            continue
        if word in _NEGATIONS:
            negated = True
        elif word not in _AUXILIARIES:
            kept.append(_stem(word))
        index += 1
    return negated, tuple(kept)


def _negation(a: _Shape, b: _Shape) -> Contradiction | None:
    if a.negated != b.negated and a.statement == b.statement and a.statement:
        return Contradiction("a negation", " ".join(a.statement))
    return None


def _skeleton(words: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words with each run of numbers, dates and months as one `#`, and those numbers."""
    kept: list[str] = []
    numbers: list[str] = []
    for word in words:
        if _NUMBER.search(word) or word in _MONTHS:
            numbers.append(word)
            if not kept or kept[-1] != "#":
                kept.append("#")
        else:
            kept.append(word)
    return tuple(kept), tuple(numbers)


def _changed_number(a: _Shape, b: _Shape) -> Contradiction | None:
    if not a.numbers or a.skeleton != b.skeleton or a.numbers == b.numbers:
        return None
    words = [word for word in a.skeleton if word != "#"]
    if len(words) < 2 or not _STATE_WORDS.intersection(words):
        return None
    return Contradiction("a changed number", " ".join(a.skeleton))


def contradiction(new: str, current: str) -> Contradiction | None:
    """Why the fact `new` probably contradicts `current` (both of one entity), or None."""
    a, b = _shape(new), _shape(current)
    if a.dated or b.dated:
        return None  # a fact with its time (a [2024-03-01] prefix) is about that time
    if not a.words or not b.words or a.words == b.words:
        return None
    return _another_value(a, b) or _negation(a, b) or _changed_number(a, b)
