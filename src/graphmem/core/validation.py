"""The quality rules of spec 001, so that what a model saves is atomic and connected.

Models skip steps, so the rules live in the tools: an observation holds one fact (5 to
150 characters, at most 2 sentences), names and types are short, and types follow one
convention (`Person`, `ApiKey`). Each rule answers with the problem and a suggestion
the model can act on, and never changes the text it checks.

Sentences are counted at a `.`, `!` or `?` that ends a word and is followed by a space
or the end, so `python-docx 1.2.0`, `v4.docx`, `e.g. this` and `Dr. Smith` are not
mistaken for several sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MAX_ENTITY_TYPE_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_OBSERVATION_LENGTH",
    "MAX_RELATION_TYPE_LENGTH",
    "MAX_SENTENCES",
    "MIN_OBSERVATION_LENGTH",
    "TypeAdvice",
    "advise_entity_type",
    "count_sentences",
    "is_text",
    "observation_problem",
]

MIN_OBSERVATION_LENGTH = 5
MAX_OBSERVATION_LENGTH = 150
MAX_SENTENCES = 2
MAX_NAME_LENGTH = 100
MAX_ENTITY_TYPE_LENGTH = 50
MAX_RELATION_TYPE_LENGTH = 50

# Words that end with a dot without ending a sentence (compared lower-case, without the dot).
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx ca cf dr mr mrs ms prof sr jr st no nr inc ltd co corp dept est fig jan feb mar apr "
    "jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun al min max avg ver vol p pp".split()
)

# A run of sentence punctuation that closes a word: followed by a space or the end.
_TERMINATOR = re.compile(r"(?P<word>\S*?)(?P<stop>[.!?]+)[\"')\]]*(?=\s|$)")


def count_sentences(text: str) -> int:
    """How many sentences `text` holds (0 for text without a letter or digit)."""
    count = 0
    start = 0
    for match in _TERMINATOR.finditer(text):
        word = match.group("word").lower().lstrip("(\"'[")
        stop = match.group("stop")
        if stop == "." and (word in _ABBREVIATIONS or _is_initial(word)):
            continue
        if _has_content(text[start : match.end()]):
            count += 1
        start = match.end()
    if _has_content(text[start:]):
        count += 1
    return count


def is_text(value: str) -> bool:
    """Whether `value` can be stored: no unpaired surrogate (a JSON escape like "\\ud800")."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_initial(word: str) -> bool:
    # "J." in "J. R. R. Tolkien": a single letter before a dot is an initial.
    return len(word) == 1 and word.isalpha()


def _has_content(text: str) -> bool:
    return any(character.isalnum() for character in text)


def observation_problem(text: str) -> tuple[str, str] | None:
    """What is wrong with an observation, and what to do: None when it is one atomic fact."""
    length = len(text)
    if length < MIN_OBSERVATION_LENGTH:
        return (
            f"Observation too short ({length} chars). Min {MIN_OBSERVATION_LENGTH}.",
            "Write the fact out in a few words, e.g. 'Lives in Berlin'.",
        )
    sentences = count_sentences(text)
    if length > MAX_OBSERVATION_LENGTH:
        return (
            f"Observation too long ({length} chars). Max {MAX_OBSERVATION_LENGTH}. Split into multiple observations.",
            "One fact per observation: split it where one fact ends and the next begins.",
        )
    if sentences > MAX_SENTENCES:
        return (
            f"Too many sentences ({sentences}). Max {MAX_SENTENCES}. One fact per observation.",
            f"Split it into {sentences} observations, one sentence each.",
        )
    return None


@dataclass(frozen=True, slots=True)
class TypeAdvice:
    """An entity type as it will be saved, and the warnings about how it was given."""

    entity_type: str
    warnings: tuple[str, ...]


def advise_entity_type(entity_type: str) -> TypeAdvice:
    """The conventional form of an entity type: first letter capitalised (done for you);
    spaces are only warned about, with the suggested CamelCase form."""
    warnings: list[str] = []
    saved = entity_type
    if saved[:1].islower():
        saved = saved[0].upper() + saved[1:]
        warnings.append(f"entityType '{entity_type}' was saved as '{saved}': types start with a capital letter.")
    if " " in saved.strip():
        suggestion = "".join(part[:1].upper() + part[1:].lower() for part in saved.split())
        warnings.append(f"entityType '{saved}' contains spaces; use '{suggestion}' next time.")
    return TypeAdvice(saved, tuple(warnings))
