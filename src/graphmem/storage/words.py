"""The word index: how text becomes index words, and BM25 over them, as SQLite FTS5 does it.

The SQLite backend indexes entities with FTS5 (`unicode61 remove_diacritics 2` under
`porter`) and ranks with its `bm25()`. This module gives the same behaviour in Python,
for the JSONL backend and for reading queries:

    text ─► tokenize() ─► words (lower-case, diacritics folded) ─► stem() ─► index words
    query terms ─► WordSearch ─► Store.search_entities() ─► SearchHit, best first

`tokenize` approximates unicode61 (letters and digits make words, everything else
separates them); `stem` is a port of FTS5's Porter stemmer, byte for byte; `bm25`
is FTS5's formula: weighted term frequency over the whole row, the row's length
against the average, and the inverse document frequency of each term.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "COLUMNS",
    "FTS5_TO_PYTHON",
    "MAX_SCORED",
    "MAX_SCORED_LARGE",
    "MIN_MATCHES",
    "PROJECT_WORDS",
    "NEWEST_PER_WANTED",
    "NEWEST_SCORED",
    "RANKED_AT_MOST",
    "SCORE_MARGIN",
    "SearchHit",
    "Term",
    "WordDocument",
    "WordSearch",
    "bm25",
    "idf",
    "index_words",
    "informative",
    "bm25_of",
    "is_common",
    "everywhere_count",
    "is_everywhere",
    "only_everywhere",
    "term_frequencies",
    "score",
    "score_bound",
    "stem",
    "tokenize",
    "word_inside",
]

PROJECT_WORDS = 1
"""Words every document holds besides its texts: the one that stands for its project, which
SQLite's word index keeps in a fifth column weighing nothing (storage/sqlite/scoping.py) and
counts in a row's length, as the other backends' scores do to give the same numbers."""

COLUMNS = ("name", "aliases", "entity_type", "observations")
"""The columns of an entity's document, in the order of `WordSearch.weights`."""


@dataclass(frozen=True, slots=True)
class Term:
    """One query word to find in the word index: as a whole word, or as the start of words."""

    word: str
    """Lower-case with diacritics folded, not stemmed (the store stems it as it stems text)."""
    prefix: bool = False


RANKED_AT_MOST = 2000
"""Up to this many entities containing a query are all scored and ranked (BM25); past it
(a common word: a third of the memory) they come newest first instead.

Scoring is about a microsecond an entity in FTS5 plus finding and counting them: 45 ms
for the 14,000 entities holding one word at 40,000 entities, a second for 350,000 at a
million, where a page of the newest ones takes a few milliseconds at any size. A word
found in that many entities tells them apart too little for its score to be worth that."""


@dataclass(frozen=True, slots=True)
class WordSearch:
    """A ranked search over entities, as the store runs it.

    The order is: every official match (an entity whose lower-cased name, type or an
    observation contains one of `needles`), then the entities that match only words;
    within each, the higher BM25 score over `terms` first, then creation order. The
    answer is the slice `offset`, `offset + limit` of that order; without a limit, all
    official matches and the best `max_word_matches` word matches, from `offset` on.

    A term found in no entity adds nothing and takes nothing away: a question is a bag of
    words. A term found in half of all entities or more (`is_common`) is left out when
    another term found somewhere is rarer: BM25 gives it no weight ("entity" in a memory
    of "entity-N" names), and matching it would only add every entity to the candidates.
    """

    needles: tuple[str, ...]
    terms: tuple[Term, ...]
    weights: tuple[float, float, float, float]
    """BM25 weight of a hit in each of `COLUMNS`."""
    entity_type: str | None = None
    """Only entities of exactly this type."""
    limit: int | None = None
    offset: int = 0
    max_word_matches: int = 50
    named_at_most: int | None = None
    """Only the first this many hits of the answer are wanted by name; the rest are only
    counted. A caller that can show a few hundred entities of a common word's thousands
    says so here, and the store ranks and names no more than that."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The hits of a ranked answer, best first, and how many entities the answer holds."""

    hits: list[SearchHit]
    total: int
    """The answer's length (after `offset` and `limit`); more than `len(hits)` when
    `named_at_most` left some unnamed."""
    more: bool = False
    """Entities past `total` contain a query too: a search without a limit that matched
    more than the store ranks stopped counting there (`total` is then a lower bound)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One entity in a ranked answer."""

    name: str
    official: bool
    """It contains a whole query, so the official substring search returns it too."""
    score: float
    """Its BM25 score over the query's words (higher is better); 0 when no word matched."""


# -- when ranking prunes: shared by the SQLite and PostgreSQL backends, whose answers agree ----

MIN_MATCHES = 2000
"""Below this many matches (all terms together) FTS5 ranks them faster than pruning would."""

# At most this many entities are scored in Python (~15 µs each: reading the document and
# splitting it into words) before FTS5's ranking is cheaper. FTS5 scores every row the
# query matches (~0.7 µs each), so on a large memory, where the common words match hundreds
# of thousands of rows, scoring a few thousand here costs at most half of that.
MAX_SCORED = 256
MAX_SCORED_LARGE = 4096
FTS5_TO_PYTHON = 40

# The bound of the terms not yet looked at is a sum of floats, as each score is: a
# relative margin keeps rounding from cutting an entity that ties the k-th score.
SCORE_MARGIN = 1.0 + 1e-9

# How many of the newest entities holding a query's words are scored (about 15 µs each in
# Python: reading the document and splitting it into words): four for each one wanted, so
# the 50 word matches of a search without a limit choose among 200, and a question with
# limit 10 among 40, at most 200.
NEWEST_PER_WANTED = 4
NEWEST_SCORED = 200


# -- words -------------------------------------------------------------------------

# unicode61 keeps runs of letters and digits; combining diacritics belong to the word
# they sit on (and are folded away), everything else separates words.
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    # remove_diacritics 2 maps a Latin letter with any diacritics to its plain letter;
    # letters without a plain ASCII base (ø, ß, Cyrillic) stay as they are.
    decomposed = unicodedata.normalize("NFD", char)
    if decomposed[0].isascii() and all(unicodedata.combining(c) for c in decomposed[1:]):
        return decomposed[0]
    if 0x300 <= ord(char) <= 0x36F:
        return ""  # a combining diacritic on its own
    return char


def tokenize(text: str) -> list[str]:
    """The words of `text`, lower-case and with diacritics folded, as unicode61 splits them."""
    lowered = text.lower()
    if lowered.isascii():
        return _ASCII_WORD.findall(lowered)
    words = []
    for word in _WORD.findall(lowered):
        if not word.isascii():
            word = "".join(map(_fold_char, word))
        if word:
            words.append(word)
    return words


# -- the Porter stemmer of FTS5 (fts5_tokenize.c), on UTF-8 bytes as there -----------------

_MAX_STEMMED = 64
"""FTS5 leaves words longer than this many bytes (or shorter than 3) as they are."""


def _is_vowel(char: int, y_is_vowel: bool) -> bool:
    return char in b"aeiou" or (y_is_vowel and char == ord("y"))


def _gobble_vc(stem: bytes, previous_consonant: bool) -> int:
    """Past the first vowel-consonant sequence: its end index + 1, or 0 if there is none."""
    consonant = previous_consonant
    i = 0
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: bytes) -> bool:
    return _gobble_vc(stem, False) != 0


def _m_gt1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) != 0


def _m_eq1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: bytes) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if stem[-1] in b"wxy":
        return False
    mask = 0
    consonant = False
    for char in stem:
        consonant = not _is_vowel(char, consonant)
        mask = (mask << 1) + consonant
    return (mask & 0x7) == 0x5


def _m_gt1_s_or_t(stem: bytes) -> bool:
    return stem[-1] in b"st" and _m_gt1(stem)


def _has_vowel(stem: bytes) -> bool:
    return any(_is_vowel(char, i > 0) for i, char in enumerate(stem))


_Rule = tuple[bytes, Callable[[bytes], bool] | None, bytes]


def _rules(condition: Callable[[bytes], bool] | None, pairs: str) -> list[_Rule]:
    rules = []
    for pair in pairs.split():
        suffix, _, replacement = pair.partition(">")
        rules.append((suffix.encode(), condition, replacement.encode()))
    return rules


# In FTS5's order: the first rule whose suffix matches decides, even if its condition fails.
_STEP2 = _rules(
    _m_gt0,
    "ational>ate tional>tion enci>ence anci>ance izer>ize logi>log bli>ble alli>al entli>ent eli>e "
    "ousli>ous ization>ize ation>ate ator>ate alism>al iveness>ive fulness>ful ousness>ous aliti>al "
    "iviti>ive biliti>ble",
)
_STEP3 = _rules(_m_gt0, "ical>ic ness> icate>ic iciti>ic ful> ative> alize>al")
_STEP4 = [
    *_rules(_m_gt1, "al> ance> ence> er> ic> able> ible> ant> ement> ment> ent>"),
    *_rules(_m_gt1_s_or_t, "ion>"),
    *_rules(_m_gt1, "ou> ism> ate> iti> ous> ive> ize>"),
]


def _apply(word: bytes, rules: list[_Rule]) -> bytes:
    for suffix, condition, replacement in rules:
        # Rules within one of FTS5's cases never share a last-but-one letter with
        # another case, so trying them all in order picks the same rule as its switch.
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if condition is None or condition(stem):
                return stem + replacement
            return word
    return word


def _step1a(word: bytes) -> bytes:
    if word.endswith(b"s"):
        if word[-2:-1] == b"e":
            if (len(word) > 4 and word[-4:-2] == b"ss") or (len(word) > 3 and word[-3:-2] == b"i"):
                return word[:-2]
            return word[:-1]
        if word[-2:-1] != b"s":
            return word[:-1]
    return word


def _step1b(word: bytes) -> tuple[bytes, bool]:
    """Step 1b, and whether it removed -ed or -ing (which calls for the clean-up)."""
    if len(word) > 3 and word.endswith(b"eed"):
        return (word[:-1], False) if _m_gt0(word[:-3]) else (word, False)
    for suffix in (b"ed", b"ing"):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return (stem, True) if _has_vowel(stem) else (word, False)
    return word, False


def _step1b2(word: bytes) -> bytes | None:
    for suffix, replacement in ((b"at", b"ate"), (b"bl", b"ble"), (b"iz", b"ize")):
        if len(word) > 2 and word.endswith(suffix):
            return word[:-2] + replacement
    return None


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a lower-case word, exactly as FTS5's `porter` tokenizer makes it."""
    data = word.encode("utf-8")
    if len(data) < 3 or len(data) > _MAX_STEMMED:
        return word
    data = _step1a(data)
    data, cleanup = _step1b(data)
    if cleanup:
        grown = _step1b2(data)
        if grown is not None:
            data = grown
        else:
            last = data[-1]
            if not _is_vowel(last, False) and last not in b"lsz" and len(data) > 1 and last == data[-2]:
                data = data[:-1]
            elif _m_eq1(data) and _o_star(data):
                data += b"e"
    if data.endswith(b"y") and _has_vowel(data[:-1]):
        data = data[:-1] + b"i"
    data = _apply(data, _STEP2)
    data = _apply(data, _STEP3)
    data = _apply(data, _STEP4)
    if data.endswith(b"e") and (_m_gt1(data[:-1]) or (_m_eq1(data[:-1]) and not _o_star(data[:-1]))):
        data = data[:-1]
    if len(data) > 1 and data.endswith(b"ll") and _m_gt1(data[:-1]):
        data = data[:-1]
    # Only ASCII suffixes are ever cut, so the bytes stay valid UTF-8.
    return data.decode("utf-8", errors="replace")


def index_words(text: str) -> list[str]:
    """The words the index holds for `text`: tokenized, then stemmed."""
    return [stem(word) for word in tokenize(text)]


# -- BM25 over documents held in memory -----------------------------------------------

_K1 = 1.2
_B = 0.75


class WordDocument:
    """One entity as the word index sees it: the index words of each of its columns."""

    __slots__ = ("_blob", "columns", "length")

    def __init__(self, name: str, aliases: Sequence[str], entity_type: str, observations: Sequence[str]) -> None:
        self.columns: tuple[tuple[str, ...], ...] = (
            tuple(index_words(name)),
            tuple(word for alias in aliases for word in index_words(alias)),
            tuple(index_words(entity_type)),
            tuple(word for observation in observations for word in index_words(observation)),
        )
        # With the one word of the project column (migration 17) that FTS5 counts too.
        self.length = sum(len(column) for column in self.columns) + PROJECT_WORDS
        # Every word with a space on each side: one substring test rules a document out.
        self._blob = " " + " ".join(word for column in self.columns for word in column) + " "

    def frequency(self, word: str, prefix: bool, weights: Sequence[float]) -> float:
        """The weighted number of times `word` (an index word) occurs, 0 if it does not."""
        if (" " + word if prefix else " " + word + " ") not in self._blob:
            return 0.0
        total = 0.0
        for column, weight in zip(self.columns, weights, strict=True):
            if prefix:
                total += weight * sum(1 for token in column if token.startswith(word))
            else:
                total += weight * column.count(word)
        return total


def bm25(documents: Sequence[WordDocument], terms: Sequence[Term], weights: Sequence[float]) -> dict[int, float]:
    """FTS5's `bm25()` (negated, so higher is better) of every document matching a term.

    Terms found nowhere, and those found in half of the documents or more when another
    term is rarer, are left out first (`informative`): FTS5 gives them no weight, only cost.

    Args:
        documents: every row of the index; their number and lengths set the statistics.
        terms: the query, as FTS5's `term OR term* OR ...`.
        weights: the weight of each column.

    Returns:
        the score of each matching document, by its index in `documents`.
    """
    return bm25_of(documents, term_frequencies(documents, terms, weights))


def term_frequencies(
    documents: Sequence[WordDocument], terms: Sequence[Term], weights: Sequence[float]
) -> list[dict[int, float]]:
    """For each term, the weighted frequency in each document that holds it, by document index."""
    frequencies: list[dict[int, float]] = []
    for term in terms:
        word = stem(term.word)
        hits = {}
        for index, document in enumerate(documents):
            frequency = document.frequency(word, term.prefix, weights)
            if frequency:
                hits[index] = frequency
        frequencies.append(hits)
    return frequencies


def informative(counts: Sequence[int], rows: int) -> list[int]:
    """The positions of the terms a query is ranked by, from how many documents hold each.

    A term found nowhere is left out: it adds nothing to any score, and a question is a bag
    of words, not a conjunction ("What console does Nate own?" in a memory without
    consoles still finds Nate). Of the others, those in half of the documents or more
    (`is_common`) are left out too when one is rarer; if none is, they are all kept.
    """
    found = [index for index, count in enumerate(counts) if count > 0]
    # Only a term found somewhere may make the common ones give way: counted among the
    # rarer, a word found nowhere left a query of it and common words matching nothing.
    return [index for index in found if not is_common(counts[index], rows)] or found


def only_everywhere(frequencies: Sequence[dict[int, float]], rows: int) -> bool:
    """Whether every term of a query found somewhere is found nearly everywhere (`is_everywhere`)."""
    found = [hits for hits in frequencies if hits]
    return bool(found) and all(is_everywhere(len(hits), rows) for hits in found)


def everywhere_count(rows: int) -> int:
    """The fewest documents a term must be found in to be `is_everywhere`."""
    return max(1, math.ceil(rows * _EVERYWHERE))


def is_everywhere(matches: int, rows: int) -> bool:
    """Whether a term is found in nearly every document (9 in 10 or more).

    Words like that ("0" and "1" in a memory where every entity has a tag `#N-0`) cannot
    tell entities apart: a query made only of them adds no entity, by its words, to those
    that contain the whole query.
    """
    return rows > 0 and matches >= everywhere_count(rows)


def bm25_of(documents: Sequence[WordDocument], frequencies: Sequence[dict[int, float]]) -> dict[int, float]:
    """`bm25` from the terms' frequencies (`term_frequencies`)."""
    if not documents or not frequencies:
        return {}
    rows = len(documents)
    average = sum(document.length for document in documents) / rows
    ranked = [frequencies[index] for index in informative([len(hits) for hits in frequencies], rows)]
    idfs = [idf(len(hits), rows) for hits in ranked]
    return {
        index: score([hits.get(index, 0.0) for hits in ranked], idfs, documents[index].length, average)
        for index in sorted({index for hits in ranked for index in hits})
    }


_EVERYWHERE = 0.9


def idf(matches: int, rows: int) -> float:
    """FTS5's inverse document frequency of a term found in `matches` of `rows` documents."""
    value = math.log((rows - matches + 0.5) / (matches + 0.5))
    # A term in half of the rows or more would get an IDF of 0 or less; FTS5 floors it.
    return value if value > 0.0 else 1e-6


def score(frequencies: Sequence[float], idfs: Sequence[float], length: int, average: float) -> float:
    """A document's BM25 score (higher is better) from its weighted frequency of each term.

    Args:
        frequencies: the weighted number of occurrences of each term (`WordDocument.frequency`).
        idfs: each term's `idf`, in the same order.
        length: the number of index words in the document.
        average: the mean number of index words per document.
    """
    # The operations of fts5Bm25Function in its order, so the floats are the same bits
    # and ties break the same way on both backends.
    total = 0.0
    for term_idf, frequency in zip(idfs, frequencies, strict=True):
        total += term_idf * ((frequency * (_K1 + 1.0)) / (frequency + _K1 * (1 - _B + _B * float(length) / average)))
    return total


def score_bound(term_idf: float) -> float:
    """More than a term with this IDF can add to any document's score, however often it occurs.

    The term's part of the score, idf * f * (k1 + 1) / (f + k1 * (...)), grows with its
    frequency f towards idf * (k1 + 1) and never reaches it.
    """
    return term_idf * (_K1 + 1.0)


def is_common(matches: int, rows: int) -> bool:
    """Whether a term found in `matches` of `rows` documents is too common to rank by.

    That is where BM25's IDF, log((rows - matches + 0.5) / (matches + 0.5)), stops being
    positive: FTS5 then floors it to 1e-6.
    """
    return 2 * matches >= rows


# The characters that end a word in both the index's tokenizer and `word_inside` (ASCII, not
# letters, digits or _).
_WORD_ENDS = frozenset(" \t\n\r!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~")


def word_inside(needle: str) -> Term | None:
    """The longest word every text containing the needle holds in the word index, or None.

    A word of the needle with a word-ending character on each side inside the needle
    ("4321" in "#4321-1") is a word of its own in any text that contains the needle. A
    number ending the needle, with a word-ending character before it ("4321" in
    "entity-4321"), starts a word of any such text ("entity-43210"): a prefix term. Only
    a number: the index stems words, and the stem of a longer word need not start with
    the stem of its start ("generalization" is "gener", not "genera..."), while a number
    is never stemmed. So the word index lists every entity whose texts could contain it.
    """
    words = []
    for match in _ASCII_WORD.finditer(needle):
        if match.start() == 0 or needle[match.start() - 1] not in _WORD_ENDS:
            continue
        if match.end() < len(needle):
            if needle[match.end()] in _WORD_ENDS:
                words.append(Term(match.group()))
        elif match.group().isdigit():
            words.append(Term(match.group(), prefix=True))
    return max(words, key=lambda term: len(term.word)) if words else None
