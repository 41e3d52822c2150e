"""Ranked word search on PostgreSQL without scoring every match, from the `entity_words` index.

The same decisions as the SQLite backend's storage/sqlite/ranking.py (MaxScore), so both
backends give the same answers:

    terms, rarest first ─► the entities holding the rarest ones, scored in Python
        (words.score over the stored word documents: FTS5's bm25() bit for bit)
    ─► stop once the terms not looked at yet could not lift an entity holding only them
       above the k-th score found (`words.score_bound`)
    ─► terms each in more than RANKED_AT_MOST entities: the newest entities holding them
       are scored instead of all of them (`newest_matches`)

Where SQLite lets FTS5 rank every match (few matches in all, or too many to prune), every
match is scored here (`all_matches`): the same answer, exhaustively.

An index word is found through `entity_words` (migration 0003): one row per entity and
distinct word, a btree on the word's first `_KEY` characters and one on (entity, word).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.storage.postgres.text import StoredDocument, escape
from graphmem.storage.words import (
    FTS5_TO_PYTHON,
    MAX_SCORED,
    MAX_SCORED_LARGE,
    MIN_MATCHES,
    NEWEST_PER_WANTED,
    NEWEST_SCORED,
    RANKED_AT_MOST,
    SCORE_MARGIN,
    Term,
    idf,
    score,
    score_bound,
    stem,
)

__all__ = ["Rows", "Scoring", "all_matches", "best_matches", "count_term", "holding", "holding_ids", "newest_matches"]

Rows = Callable[[str, Sequence[Any] | dict[str, Any]], list[tuple[Any, ...]]]
"""Runs one query in the store's transaction and returns its rows (`_Reads._rows`)."""

_KEY = 256
"""Characters of a word in the btree key (see migration 0003)."""


def _after(prefix: str) -> str | None:
    """The least string greater than every string starting with `prefix`, or None if there is none."""
    while prefix:
        last = ord(prefix[-1]) + 1
        if last == 0xD800:
            last = 0xE000  # surrogates are not text
        if last <= 0x10FFFF:
            return prefix[:-1] + chr(last)
        prefix = prefix[:-1]
    return None


def _word_condition(term: Term, alias: str) -> tuple[str, list[Any]]:
    """SQL true for the rows of `entity_words AS alias` whose word is the term's (or starts with it)."""
    word = stem(term.word)
    key = f"left({alias}.word, {_KEY})"
    if not term.prefix:
        if len(word) < _KEY:
            return f"{key} = %s", [word]
        return f"{key} = %s AND {alias}.word = %s", [word[:_KEY], word]
    if len(word) > _KEY:
        return f"{key} = %s AND starts_with({alias}.word, %s)", [word[:_KEY], word]
    # A range of the btree: the words are COLLATE "C", in code-point order.
    upper = _after(word)
    if upper is None:
        return f"{key} >= %s", [word]
    return f"{key} >= %s AND {key} < %s", [word, upper]


def holding(term: Term, entity: str = "e") -> tuple[str, list[Any]]:
    """SQL true for the entities (`entities AS entity`) whose word document holds the term."""
    condition, params = _word_condition(term, "w")
    return f"EXISTS (SELECT 1 FROM entity_words AS w WHERE w.entity_id = {entity}.id AND {condition})", params


def holding_ids(term: Term) -> tuple[str, dict[str, Any]]:
    """A subquery for the ids of the entities holding the term, with named parameters."""
    condition, values = _word_condition(term, "w")
    names = [f"word{i}" for i in range(len(values))]
    named = condition % tuple(f"%({name})s" for name in names)
    return f"SELECT w.entity_id FROM entity_words AS w WHERE {named}", dict(zip(names, values, strict=True))


def count_term(rows: Rows, term: Term, at_most: int, within: str = "") -> int:
    """How many entities hold the term, counting no further than `at_most`; `within`, a
    condition on their entity `e` that keeps to a scope's projects (`scoping.and_visible`)."""
    condition, params = _word_condition(term, "w")
    # A prefix matches several words of one entity: each entity counts once.
    distinct = "DISTINCT " if term.prefix else ""
    join = " JOIN entities AS e ON e.id = w.entity_id" if within else ""
    ((found,),) = rows(
        f"SELECT count(*) FROM (SELECT {distinct}w.entity_id FROM entity_words AS w{join}"
        f" WHERE {condition}{within} LIMIT %s) AS f",
        [*params, at_most],
    )
    return int(found)


@dataclass(frozen=True, slots=True)
class Scoring:
    """What scoring an entity's word document needs: the terms' stems and IDFs, the columns'
    weights and the mean document length."""

    stems: list[tuple[str, bool]]
    weights: Sequence[float]
    idfs: list[float]
    average: float

    @classmethod
    def of(
        cls, terms: Sequence[Term], counts: Sequence[int], rows: int, average: float, weights: Sequence[float]
    ) -> Scoring:
        return cls([(stem(term.word), term.prefix) for term in terms], weights, [idf(c, rows) for c in counts], average)

    def score(self, columns: Sequence[str]) -> float | None:
        """The document's score, or None when it holds no term."""
        document = StoredDocument(columns)
        frequencies = [document.frequency(word, prefix, self.weights) for word, prefix in self.stems]
        if not any(frequencies):
            return None
        return score(frequencies, self.idfs, document.length, self.average)


def _filters(exclude: Collection[int], entity_type: str | None, within: str) -> tuple[str, list[Any]]:
    """Conditions on the entity `e` (each starting with AND), and their parameters."""
    sql, params = within, list[Any]()
    if exclude:
        sql += " AND NOT (e.id = ANY(%s))"
        params.append(sorted(exclude))
    if entity_type is not None:
        sql += " AND e.entity_type = %s"
        params.append(escape(entity_type))
    return sql, params


def _scored(found: Sequence[tuple[Any, ...]], scoring: Scoring) -> dict[int, float]:
    scored = {}
    for entity_id, columns in found:
        value = scoring.score(columns)
        if value is not None:
            scored[entity_id] = value
    return scored


def _best_first(scored: dict[int, float], wanted: int) -> list[tuple[int, float]]:
    """The best `wanted`, equal scores in id order (as `ORDER BY bm25(), rowid`)."""
    return sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:wanted]


def all_matches(
    rows: Rows,
    scoring: Scoring,
    terms: Sequence[Term],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    within: str = "",
) -> list[tuple[int, float]]:
    """The best `wanted` of every entity holding a term, outside `exclude`, each one scored."""
    scored = _all_scores(rows, scoring, terms, exclude, entity_type, within)
    return _best_first(scored, wanted)


def _all_scores(
    rows: Rows,
    scoring: Scoring,
    terms: Sequence[Term],
    exclude: Collection[int],
    entity_type: str | None,
    within: str,
) -> dict[int, float]:
    conditions, params = [], []
    for term in terms:
        condition, values = _word_condition(term, "w")
        conditions.append(f"({condition})")
        params += values
    where, more = _filters(exclude, entity_type, within)
    found = rows(
        "SELECT e.id, e.word_columns FROM entities AS e WHERE e.id IN"
        f" (SELECT w.entity_id FROM entity_words AS w WHERE {' OR '.join(conditions)}){where}",
        [*params, *more],
    )
    return _scored(found, scoring)


def best_matches(
    rows: Rows,
    scoring: Scoring,
    terms: Sequence[Term],
    counts: Sequence[int],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    within: str = "",
) -> list[tuple[int, float]]:
    """The best `wanted` entities holding any term outside `exclude`, with their scores.

    Best first, equal scores in id order. The decisions of SQLite's `best_matches`, term
    by term, so that the answer is SQLite's: where it would let FTS5 rank every match,
    every match is scored here. `within` keeps each query to the transaction's projects (a
    condition on the entity `e`); the terms' counts, and so the decisions, are the whole
    memory's, as SQLite's are.
    """
    if not terms or sum(counts) < MIN_MATCHES:
        return all_matches(rows, scoring, terms, wanted, exclude, entity_type, within)
    max_scored = max(MAX_SCORED, min(MAX_SCORED_LARGE, sum(counts) // FTS5_TO_PYTHON))
    bounds = [score_bound(term_idf) for term_idf in scoring.idfs]
    where, more = _filters((), entity_type, within)
    scored: dict[int, float] = {}
    seen: set[int] = set()
    unseen = sorted(range(len(terms)), key=lambda index: counts[index])
    while unseen:
        if len(scored) >= wanted:
            kth = heapq.nlargest(wanted, scored.values())[-1]
            if sum(bounds[index] for index in unseen) * SCORE_MARGIN < kth:
                break  # an entity holding only the terms left scores below the k-th
        index = unseen[0]
        if all(counts[left] > RANKED_AT_MOST for left in unseen):
            among = [terms[left] for left in unseen]
            scored.update(_score_newest(rows, scoring, among, wanted, set(exclude) | seen, entity_type, within))
            break
        if len(seen) + counts[index] > max_scored:
            # SQLite ranks the rest exactly (FTS5): so does scoring every match left.
            rest = _all_scores(rows, scoring, [terms[i] for i in unseen], set(exclude) | seen, entity_type, within)
            scored.update(rest)
            break
        unseen.pop(0)
        holds, params = holding(terms[index])
        for entity_id, columns in rows(
            f"SELECT e.id, e.word_columns FROM entities AS e WHERE {holds}{where}", [*params, *more]
        ):
            if entity_id in seen:
                continue
            seen.add(entity_id)
            if entity_id in exclude:
                continue
            value = scoring.score(columns)
            scored[entity_id] = 0.0 if value is None else value
    return _best_first(scored, wanted)


def newest_matches(
    rows: Rows,
    scoring: Scoring,
    terms: Sequence[Term],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    within: str = "",
) -> list[tuple[int, float]]:
    """The best `wanted` of the newest entities holding the terms (each in thousands of
    entities), outside `exclude`: see SQLite's `newest_matches`."""
    return _best_first(_score_newest(rows, scoring, terms, wanted, exclude, entity_type, within), wanted)


def _score_newest(
    rows: Rows,
    scoring: Scoring,
    among: Sequence[Term],
    wanted: int,
    exclude: Collection[int],
    entity_type: str | None,
    within: str,
) -> dict[int, float]:
    """The scores of the newest entities holding every term of `among` (then, when fewer
    than `wanted`, of those holding any), outside `exclude`: four for each one wanted, at
    most `NEWEST_SCORED`."""
    pool = min(NEWEST_SCORED, NEWEST_PER_WANTED * max(1, wanted))
    conditions, params = [], []
    for term in among:
        condition, values = holding(term)
        conditions.append(condition)
        params += values
    joins = [" AND ".join(conditions)]
    if len(among) > 1:
        joins.append(" OR ".join(conditions))
    scored: dict[int, float] = {}
    for joined in joins:
        where, more = _filters(set(exclude) | set(scored), entity_type, within)
        found = rows(
            f"SELECT e.id, e.word_columns FROM entities AS e WHERE ({joined}){where} ORDER BY e.id DESC LIMIT %s",
            [*params, *more, pool],
        )
        for entity_id, columns in found:
            value = scoring.score(columns)
            scored[entity_id] = 0.0 if value is None else value
        if len(scored) >= wanted:
            break
    return scored
