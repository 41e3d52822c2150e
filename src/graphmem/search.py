"""Search policy: how a query becomes needles, and how the matches are ranked.

The store finds where each needle occurs (`Store.find_text`); this module decides
what to look for and in which order to answer. The whole query is always one
needle, so every entity the official substring search returns is returned here
too; a query of several words adds one needle per meaningful word, so the words
match in any order ("Where does Alice work?" finds Alice, who "works at Acme").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from graphmem.storage.base import FieldHits

__all__ = ["MAX_WORD_MATCHES", "Ranked", "query_terms", "rank"]

# Function words carry no meaning on their own in a question to the memory; without
# this list "Where does Alice work?" would match every entity that mentions "does".
_STOPWORD_TEXT = (
    "a about above after again against all am an and any are as at be because been before being "
    "below between both but by can could did do does doing down during each few for from further "
    "had has have having he her here hers herself him himself his how i if in into is it its itself "
    "just me more most my myself no nor not now of off on once only or other our ours ourselves out "
    "over own same she should so some such than that the their theirs them themselves then there "
    "these they this those through to too under until up very was we were what when where which "
    "while who whom why will with would you your yours yourself yourselves tell know please "
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[^\W_]+(?:[-_.'][^\W_]+)*")

# Endings stripped from longer words so "works", "worked" and "working" all find "work";
# matching is by substring, so the stem also finds every longer form.
_SUFFIXES = ("ing", "ed", "es", "s")
_MIN_STEM = 3

# What a match in each field is worth: a name match says more than a type match,
# which says more than a mention somewhere in the observations.
_NAME_WEIGHT = 4.0
_TYPE_WEIGHT = 2.0
_OBSERVATION_WEIGHT = 1.0

MAX_WORD_MATCHES = 50
"""How many entities matching only some words of a query are returned.

A question such as "Where does Alice work?" can mention a word that thousands of
entities contain; the best few are what a model can use, and the whole-query
matches (the official answer) are never cut.
"""


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM + 1:
            return word[: -len(suffix)]
    return word


def query_terms(query: str) -> list[str]:
    """The lower-cased word needles of a query beyond the whole query itself.

    A one-word query has no extra terms: the whole query already covers it.
    """
    words = [word for word in _WORD.findall(query.lower()) if len(word) > 1]
    meaningful = [word for word in words if word not in _STOPWORDS]
    terms: list[str] = []
    for word in meaningful:
        term = _stem(word)
        if term not in terms:
            terms.append(term)
    if len(terms) == 1 and terms[0] == query.lower().strip():
        return []
    return terms


@dataclass(frozen=True, slots=True)
class Ranked:
    """An entity name with the score that placed it."""

    name: str
    whole_query: bool
    terms_matched: int
    field_score: float


def _field_score(hits: FieldHits) -> float:
    score = 0.0
    if hits.in_name:
        score += _NAME_WEIGHT
    if hits.in_type:
        score += _TYPE_WEIGHT
    if hits.observation_hits:
        # More mentions help, but with diminishing returns: an entity with twenty
        # observations should not beat a name match because it is verbose.
        score += _OBSERVATION_WEIGHT * min(hits.observation_hits, 3) ** 0.5
    return score


def rank(
    whole_query_hits: Mapping[str, FieldHits],
    term_hits: Sequence[Mapping[str, FieldHits]],
    max_word_matches: int = MAX_WORD_MATCHES,
) -> list[Ranked]:
    """Order the matching entities best first.

    An entity matching the whole query comes first, then more query words matched,
    then the weight of the fields that matched; ties keep the order of creation.
    Every whole-query match is kept (the official answer is never cut); of the
    entities that match only some words, the best `max_word_matches` are kept.

    Args:
        whole_query_hits: where the whole query occurs, per entity name.
        term_hits: where each word needle occurs, one mapping per term.
        max_word_matches: how many entities matching only words to keep.
    """
    candidates: dict[str, int] = {name: hits.order for name, hits in whole_query_hits.items()}
    for hits_of_term in term_hits:
        for name, hits in hits_of_term.items():
            candidates.setdefault(name, hits.order)
    ranked = []
    for name, order in candidates.items():
        whole = whole_query_hits.get(name)
        matched = [hits[name] for hits in term_hits if name in hits]
        score = _field_score(whole) * 2 if whole else 0.0
        score += sum(_field_score(hits) for hits in matched)
        ranked.append((Ranked(name, whole is not None, len(matched), score), order))
    ranked.sort(key=lambda pair: (not pair[0].whole_query, -pair[0].terms_matched, -pair[0].field_score, pair[1]))
    whole_count = len(whole_query_hits)
    return [item for item, _ in ranked[: whole_count + max_word_matches]]
