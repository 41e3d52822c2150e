"""Ranked word search over SQLite's FTS5 word index without scoring every match.

FTS5 ranks `ORDER BY bm25() LIMIT k` by scoring every row its query matches, about
0.7 µs a row: a question holding a word found in a third of the memory ("berlin")
scores a third of the memory, 25 ms at 40,000 entities and most of a second at a
million. Yet the best entities of a question are nearly always decided by its rarest
word (a name, an id). This module finds the same answer from those (MaxScore):

    terms, rarest first ─► the entities matching the rarest ones, scored in Python
        (words.score: the floats of FTS5's bm25(), bit for bit)
    ─► stop once the terms not looked at yet could not lift an entity that matches
       only them above the k-th score found: each term adds less than
       `words.score_bound(idf)` to any score, however often it occurs.

The statistics BM25 needs come from the index itself: the number of rows and of words
from FTS5's averages record, and each term's document count from FTS5, remembered in
`TermCounts` while the index is unchanged (counting a word in half a million entities
takes 20 ms). When the rarest terms alone match too many entities, `best_matches`
answers None and the store lets FTS5 rank as before. Terms each in more than
`RANKED_AT_MOST` entities are not ranked over all of them: the entities holding only
those are scored among the newest that hold them (`newest_matches`, and the end of
`best_matches` once the rarer terms are scored).
"""

from __future__ import annotations

import heapq
import itertools
import json
import sqlite3
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from graphmem.storage.sqlite.scoping import WORDS, WordIndex
from graphmem.storage.words import (
    FTS5_TO_PYTHON,
    MAX_SCORED,
    MAX_SCORED_LARGE,
    MIN_MATCHES,
    NEWEST_PER_WANTED,
    NEWEST_SCORED,
    PROJECT_WORDS,
    RANKED_AT_MOST,
    SCORE_MARGIN,
    Term,
    idf,
    score,
    score_bound,
    stem,
    tokenize,
)

__all__ = ["MIN_MATCHES", "TermCounts", "best_matches", "count_term", "fts_phrase", "index_size", "newest_matches"]

# Word sets: with more terms left than this, or once this many queries did not settle the
# answer, FTS5 ranking everything is as cheap (each query also counts every term's rows).
# Measured on benchmarks.search's question, 5 terms left: 9 ms ranking all, 15 to 21 ms by sets.
_MAX_SET_TERMS = 4
_MAX_SET_QUERIES = 6

# FTS5 keeps the table's row count and each column's total number of words in the
# "averages" record: row 1 of its %_data table, SQLite varints one after the other.
_AVERAGES_ROWID = 1

T = TypeVar("T")


def fts_phrase(text: str) -> str:
    """`text` as one FTS5 phrase, quotes escaped."""
    return '"' + text.replace('"', '""') + '"'


# The columns a query's words are looked for in: never the project column (migration 17),
# whose one word per entity a query such as "gp0" would otherwise find in every entity.
_TEXT_COLUMNS = "{name aliases entity_type observations}"


def term_query(term: Term) -> str:
    """The FTS5 query for one term: the word, or any word it starts, in the text columns."""
    return f"{_TEXT_COLUMNS} : {fts_phrase(term.word)}" + ("*" if term.prefix else "")


def index_size(conn: sqlite3.Connection, table: str) -> tuple[int, int]:
    """The number of rows of an FTS5 table and of words in all of them, as bm25() reads them.

    Only valid outside a write transaction: FTS5 writes the record at commit.
    """
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
    values = _varints(row[0]) if row is not None else []
    # A new table has no record, or an empty one until its first commit.
    return (values[0], sum(values[1:])) if values else (0, 0)


def _varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers: 7 bits a byte, high bit set on all but the last
    (a ninth byte gives all 8 bits)."""
    values = []
    position = 0
    while position < len(blob):
        value = 0
        for length in range(1, 10):
            byte = blob[position]
            position += 1
            if length == 9:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


class TermCounts:
    """How many rows of the word index each term matches, remembered while the index is unchanged.

    The store calls `forget` when its own write commits; a write by another connection
    changes SQLite's `data_version`, which `valid_for` compares.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[Term, int, WordIndex], int] = {}
        self._facts: dict[Hashable, object] = {}
        self._version: int | None = None

    def valid_for(self, version: int) -> None:
        """Start answering for the memory as of `version` (SQLite's `data_version`), forgetting
        what was remembered of any other."""
        if version != self._version:
            self._counts.clear()
            self._facts.clear()
            self._version = version

    def fact(self, key: Hashable, find: Callable[[], T]) -> T:
        """`find()`, remembered under `key` while the memory is unchanged: what a search finds
        out about its scope before it searches (its word index, its projects' marks)."""
        if key in self._facts:
            return cast(T, self._facts[key])
        found = find()
        if self._version is not None:
            self._facts[key] = found
        return found

    def forget(self) -> None:
        """Forget every count: the index changed."""
        self._counts.clear()
        self._facts.clear()
        self._version = None

    def count(self, conn: sqlite3.Connection, term: Term, at_most: int, word_index: WordIndex = WORDS) -> int:
        """The number of rows of `word_index` matching `term`, counting no further than `at_most`."""
        known = self._counts.get((term, at_most, word_index))
        if known is not None:
            return known
        found = count_term(conn, term, at_most, word_index)
        if self._version is not None:
            self._counts[term, at_most, word_index] = found
        return found


def count_term(conn: sqlite3.Connection, term: Term, at_most: int, word_index: WordIndex = WORDS) -> int:
    """The number of rows of word index `word_index` matching `term`, counting no further than `at_most`."""
    (found,) = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {word_index.table} WHERE {word_index.table} MATCH ? LIMIT ?)",
        (word_index.query(term_query(term)), at_most),
    ).fetchone()
    return int(found)


# Porter's rules only replace or cut a word's ending, never all of it ("aed" is "a"), and
# turn a "y" into "i" only after a vowel: the stem of a word starts with its first
# character. (Not with its first two: "ays" is "ai".)
_STEM_KEEPS = 1


def _starts(stems: Sequence[str]) -> frozenset[str] | None:
    """The `_STEM_KEEPS`-character starts of the words that may stem to a term; None if any word may."""
    if any(len(word) < _STEM_KEEPS for word in stems):
        return None  # an empty stem: any word may match
    return frozenset(word[:_STEM_KEEPS] for word in stems)


@dataclass(frozen=True, slots=True)
class _Scoring:
    """What scoring a word-index row in Python needs: the terms, their stems and IDFs, the
    columns' weights and the mean document length."""

    terms: Sequence[Term]
    stems: list[str]
    weights: Sequence[float]
    idfs: list[float]
    average: float
    starts: frozenset[str] | None
    """The first `_STEM_KEEPS` characters of the words that may stem to a term (None: any word may)."""

    @classmethod
    def of(
        cls, terms: Sequence[Term], counts: Sequence[int], rows: int, words: int, weights: Sequence[float]
    ) -> _Scoring:
        idfs = [idf(count, rows) for count in counts]
        stems = [stem(term.word) for term in terms]
        return cls(terms, stems, weights, idfs, words / rows, _starts(stems))

    def row(self, name: str, aliases: str, entity_type: str, observations: str) -> float:
        """A row's score, the floats of FTS5's bm25() for it."""
        # WordDocument's frequencies, column by column in the same order (so the same
        # float sums), stemming only the words that may stem to a term: the stem of a
        # word keeps its first character (`_STEM_KEEPS`), so a word starting otherwise
        # than every term cannot match one. Stemming every word of a row was
        # most of the time of scoring it. The columns hold aliases and observations one
        # a line, and a line break separates words as the end of a text does.
        frequencies = [0.0] * len(self.stems)
        length = 0
        for text, weight in zip((name, aliases, entity_type, observations), self.weights, strict=True):
            words = tokenize(text)
            length += len(words)
            starts = self.starts
            stems = [stem(word) for word in words if starts is None or word[:_STEM_KEEPS] in starts]
            for index, (word, term) in enumerate(zip(self.stems, self.terms, strict=True)):
                if term.prefix:
                    frequencies[index] += weight * sum(1 for token in stems if token.startswith(word))
                else:
                    frequencies[index] += weight * stems.count(word)
        # Plus the project column's one word (migration 17), which FTS5 counts in the row's length.
        return score(frequencies, self.idfs, length + PROJECT_WORDS, self.average)


def best_matches(
    conn: sqlite3.Connection,
    terms: Sequence[Term],
    counts: Sequence[int],
    rows: int,
    words: int,
    weights: Sequence[float],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    word_index: WordIndex = WORDS,
) -> list[tuple[int, float]] | None:
    """The best `wanted` entities matching any term outside `exclude`, with their scores.

    Best first, equal scores in id order, as `ORDER BY bm25(), rowid LIMIT wanted` gives
    them; or None when finding them here would cost more than letting FTS5 rank.

    Args:
        terms: the informative terms, in query order (the order of the score's sum).
        counts: how many rows each term matches.
        rows, words: the index's number of rows and of words in them.
        weights: each column's weight.
        word_index: the word index read, and what each query adds to keep to the scope.
    """
    if not terms or sum(counts) < MIN_MATCHES:
        return None
    max_scored = max(MAX_SCORED, min(MAX_SCORED_LARGE, sum(counts) // FTS5_TO_PYTHON))
    scoring = _Scoring.of(terms, counts, rows, words, weights)
    bounds = [score_bound(term_idf) for term_idf in scoring.idfs]
    sql = f"SELECT w.rowid, w.name, w.aliases, w.entity_type, w.observations FROM {word_index.table} AS w"
    if entity_type is not None:
        sql += " JOIN entities AS e ON e.id = w.rowid AND e.entity_type = :type"
    sql += f" WHERE {word_index.table} MATCH :query LIMIT :limit"
    scored: dict[int, float] = {}
    seen: set[int] = set()
    unseen = sorted(range(len(terms)), key=lambda index: counts[index])
    while unseen:
        if len(scored) >= wanted:
            kth = heapq.nlargest(wanted, scored.values())[-1]
            if sum(bounds[index] for index in unseen) * SCORE_MARGIN < kth:
                break  # an entity matching only the terms left scores below the k-th
        index = unseen[0]
        if all(counts[left] > RANKED_AT_MOST for left in unseen):
            # Only words each in thousands of entities are left ("berlin", "project"): as
            # when a query has no other (newest_matches), the entities matching only those
            # are taken among the newest holding them, not ranked over all of them.
            among = [terms[left] for left in unseen]
            skip = set(exclude) | seen
            scored.update(_score_newest(conn, scoring, among, wanted, skip, entity_type, word_index))
            break
        if len(seen) + counts[index] > max_scored:
            # Too many to score here: FTS5 scores the rest, a few words at a time.
            found = _best_by_word_sets(
                conn, terms, bounds, unseen, weights, wanted, exclude, entity_type, scored, word_index
            )
            if found is None:
                return None
            break
        unseen.pop(0)
        params = {"query": word_index.query(term_query(terms[index])), "limit": max_scored + 1, "type": entity_type}
        for rowid, name, aliases, entity_type_text, observations in conn.execute(sql, params):
            if rowid in seen:
                continue
            seen.add(rowid)
            if rowid in exclude:
                continue
            scored[rowid] = scoring.row(name, aliases, entity_type_text, observations)
    return _best_first(scored, wanted)


def _best_first(scored: dict[int, float], wanted: int) -> list[tuple[int, float]]:
    """The best `wanted` of the scored entities, equal scores in id order, as `ORDER BY bm25(), rowid` gives them."""
    return sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:wanted]


def newest_matches(
    conn: sqlite3.Connection,
    terms: Sequence[Term],
    counts: Sequence[int],
    rows: int,
    words: int,
    weights: Sequence[float],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    word_index: WordIndex = WORDS,
) -> list[tuple[int, float]]:
    """The best `wanted` of the newest entities matching the terms, outside `exclude`, with their scores.

    For a query every word of which is in thousands of entities: finding the best of all
    of them makes FTS5 score every one (it even counts each term's rows again for its
    IDF, half a second for three common words at a million entities), for words that tell
    them apart little. Instead the newest entities holding every term (four for each
    one wanted, at most `NEWEST_SCORED`) are scored (then, when those are too few, the
    newest holding any), with the scores FTS5's bm25() would give them; best first, equal
    scores in id order.
    """
    scoring = _Scoring.of(terms, counts, rows, words, weights)
    scored = _score_newest(conn, scoring, terms, wanted, exclude, entity_type, word_index)
    return _best_first(scored, wanted)


def _score_newest(
    conn: sqlite3.Connection,
    scoring: _Scoring,
    among: Sequence[Term],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    word_index: WordIndex,
) -> dict[int, float]:
    """The scores of the newest entities holding every term of `among` (then, when fewer
    than `wanted`, of those holding any), outside `exclude`, scored over all of `scoring`'s
    terms: four for each one wanted, at most `NEWEST_SCORED`."""
    pool = min(NEWEST_SCORED, NEWEST_PER_WANTED * max(1, wanted))
    sql = (
        f"SELECT rowid, name, aliases, entity_type, observations FROM {word_index.table}"
        f" WHERE {word_index.table} MATCH ? ORDER BY rowid DESC"
    )
    scored: dict[int, float] = {}
    queries = [word_index.query(" AND ".join(map(term_query, among)))]
    if len(among) > 1:
        queries.append(word_index.query(" OR ".join(map(term_query, among))))
    for query in queries:
        seen = 0
        cursor = conn.execute(sql, (query,))
        try:
            while seen < pool and (chunk := cursor.fetchmany(pool - seen)):
                for rowid, name, aliases, entity_type_text, observations in chunk:
                    # The word index holds the type as it is: a filter is a comparison here,
                    # which keeps FTS5 walking its own rows newest first.
                    if (
                        rowid in exclude
                        or rowid in scored
                        or (entity_type is not None and entity_type_text != entity_type)
                    ):
                        continue
                    seen += 1
                    scored[rowid] = scoring.row(name, aliases, entity_type_text, observations)
        finally:
            cursor.close()
        if len(scored) >= wanted:
            break
    return scored


def _best_by_word_sets(
    conn: sqlite3.Connection,
    terms: Sequence[Term],
    bounds: Sequence[float],
    unseen: Sequence[int],
    weights: Sequence[float],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    scored: dict[int, float],
    word_index: WordIndex,
) -> dict[int, float] | None:
    """Add to `scored` the best entities that match only the `unseen` terms, FTS5 scoring them.

    An entity matching exactly the set S of those terms scores below the sum of their
    bounds. The sets are taken largest bound first, each with one FTS5 query for the
    entities matching every term of S and no other term; FTS5 scores only those, and
    the query stops once the k-th score found beats every set left. For a question
    whose rare word matches few entities, that is the entities holding all its common
    words (a tenth of the memory at most, often far less) instead of any of them.

    The query names every term, those of S in query order: a term a row lacks adds
    nothing to its bm25() (0.0 added to a sum leaves it unchanged), so each score has
    the bits of the whole query's. Returns None when there are too many sets to try.
    """
    if len(unseen) > _MAX_SET_TERMS:
        return None
    others = [index for index in range(len(terms)) if index not in unseen]
    sets = [sorted(chosen) for size in range(len(unseen), 0, -1) for chosen in itertools.combinations(unseen, size)]
    sets.sort(key=lambda chosen: -sum(bounds[index] for index in chosen))
    # The project column (migration 17) weighs nothing.
    sql = (
        f"SELECT w.rowid, -bm25({word_index.table}, {', '.join('?' * len(weights))}, 0) AS score"
        f" FROM {word_index.table} AS w"
    )
    if entity_type is not None:
        sql += " JOIN entities AS e ON e.id = w.rowid AND e.entity_type = ?"
    sql += (
        f" WHERE {word_index.table} MATCH ? AND w.rowid NOT IN (SELECT value FROM json_each(?))"
        " ORDER BY score DESC, w.rowid LIMIT ?"
    )
    excluded = json.dumps(sorted(exclude))
    for queries, chosen in enumerate(sets):
        if len(scored) >= wanted:
            kth = heapq.nlargest(wanted, scored.values())[-1]
            if sum(bounds[index] for index in chosen) * SCORE_MARGIN < kth:
                return scored  # every set left scores below the k-th
        if queries == _MAX_SET_QUERIES:
            return None
        lacking = [index for index in unseen if index not in chosen] + others
        query = " AND ".join(term_query(terms[index]) for index in chosen)
        if lacking:
            query = f"({query}) NOT ({' OR '.join(term_query(terms[index]) for index in lacking)})"
        query = word_index.query(query)
        params = [*weights, *([entity_type] if entity_type is not None else []), query, excluded, wanted]
        scored.update(conn.execute(sql, params).fetchall())
    return scored
