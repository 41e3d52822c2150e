"""Search policy: what a query looks for, and in which order the answer comes.

A query (or each of a list of queries) is looked for twice:

- **as a whole**, case-insensitively inside names, types and observations: the official
  search. Every entity it finds is in the answer, ahead of all others, so a client that
  relied on the official server sees the same entities first;
- **word by word** in the word index (`storage.words`): each meaningful word, as a word
  and as the start of longer words, stemmed ("moved" finds "moving"), with case and
  diacritics folded. BM25 scores the entities, a hit in a name weighing most, then in an
  alias, a type, an observation. The score orders the whole-query matches among
  themselves, and brings in the entities that match only some words, so a question in
  plain language ("Which city did Bob move to after he left Acme?") finds Bob.

Why whole-query matches first: finding the exact text the caller typed is the strongest
evidence there is, and keeping the official answer on top makes graphmem a drop-in. Why
BM25 for the rest: rare words (a name, "Acme") say more than common ones ("works"), and
a short entity that mentions a word says more than a long one that mentions it once.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.storage.words import RANKED_AT_MOST, Term, WordSearch, tokenize

__all__ = ["MAX_WORD_MATCHES", "RANKED_AT_MOST", "STOPWORDS", "WEIGHTS", "query_terms", "word_search"]

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
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Words this long are also looked for as the start of longer words ("berl" finds
# Berlin). Shorter ones would match too much ("bo" in bolt, bottle, book...).
_MIN_PREFIX = 3


def _is_prefix(word: str) -> bool:
    """Whether a query word also finds the longer words it starts.

    Not a number: "111" is not a form of 1110 or 11100 the way "berl" is of Berlin, and on
    a memory of numbered things (tickets, tags, versions) it would bring in hundreds of them.
    """
    return len(word) >= _MIN_PREFIX and not word.isdigit()


WEIGHTS = (10.0, 8.0, 4.0, 1.0)
"""BM25 weight of a hit in an entity's name, aliases, type and observations.

A name says what the entity is; an alias almost as much; a type is shared by many
entities; an observation is one fact among several. Measured on the retrieval-quality
set in the tests (tests/fixtures/search/quality.json).
"""

MAX_WORD_MATCHES = 50
"""How many entities matching only some words of a query an unlimited search returns.

A question such as "Where does Alice work?" can mention a word that thousands of
entities contain; the best few are what a model can use, and the whole-query matches
(the official answer) are never cut. With `limit`, the caller chooses instead.
"""


def query_terms(query: str) -> list[str]:
    """The words of a query the word index looks for, lower-case and diacritics folded.

    Function words are left out, unless the query has nothing else ("The Who").
    """
    words = tokenize(query)
    meaningful = [word for word in words if word not in STOPWORDS]
    return list(dict.fromkeys(meaningful or words))


def word_search(
    queries: Sequence[str], *, entity_type: str | None = None, limit: int | None = None, offset: int = 0
) -> WordSearch:
    """The search the store runs for these queries (an entity may match any of them)."""
    # One term per word: the word itself or, when long enough and not a number, any word it starts.
    # Looking for the exact form as well (so "ann" ranks Ann above Annual) measured no
    # better on the quality set and costs a fifth more time on long questions.
    terms = [Term(word, prefix=_is_prefix(word)) for query in queries for word in query_terms(query)]
    return WordSearch(
        needles=tuple(dict.fromkeys(query.lower() for query in queries)),
        terms=tuple(dict.fromkeys(terms)),
        weights=WEIGHTS,
        entity_type=entity_type,
        limit=limit,
        offset=offset,
        max_word_matches=MAX_WORD_MATCHES,
    )
