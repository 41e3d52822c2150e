"""PostgresStore's searches: the official substring search, and ranked word search (BM25).

The official search is `LIKE '%needle%'` on the lower-cased copies graphmem writes (a pg_trgm
index narrows it). Ranked search scores entities in Python with storage/words.py, from the word
documents kept on each entity, with the candidates and the terms' counts from the inverted index
`entity_words` (ranking.py decides which to score, as SQLite's ranking does), so its scores are
the JSONL backend's and SQLite's FTS5 `bm25()` to the bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from graphmem.storage.base import FieldHits
from graphmem.storage.postgres import official, ranking
from graphmem.storage.postgres.text import unescape
from graphmem.storage.postgres.writes import _Writes
from graphmem.storage.words import (
    PROJECT_WORDS,
    RANKED_AT_MOST,
    SearchHit,
    SearchResult,
    Term,
    WordSearch,
    everywhere_count,
    informative,
    is_common,
    is_everywhere,
)

# Term counts remembered by a store (for its current write count), at most this many.
_TERM_COUNTS_KEPT = 4096


class _Search(_Writes):
    """The searches of `PostgresStore`."""

    _term_counts: dict[tuple[int, Term | None, int, str], int]
    """How many entities of a scope hold a term, by (write count, term, at most, the scope's
    condition): see `_count_term`; with the term None, how many words the scope's documents
    hold (`_statistics`)."""

    def find_text(self, needle: str) -> dict[str, FieldHits]:
        params: dict[str, Any] = {}
        name, entity_type = official.contains("name_lc", needle, params), official.contains("type_lc", needle, params)
        entity_rows = self._rows(
            f"SELECT id, name, {name}, {entity_type} FROM entities"
            f" WHERE (({name}) OR ({entity_type})){self._seen('project')}",
            params,
        )
        observation_rows = self._rows(
            "SELECT e.id, e.name, count(*) FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
            f" WHERE {official.contains('o.content_lc', needle, params)}{self._seen('e.project')}"
            " GROUP BY e.id, e.name",
            params,
        )
        hits: dict[str, FieldHits] = {}
        for entity_id, stored_name, in_name, in_type in entity_rows:
            hits[unescape(stored_name)] = FieldHits(bool(in_name), bool(in_type), 0, entity_id)
        for entity_id, stored_name, count in observation_rows:
            found = unescape(stored_name)
            previous = hits.get(found)
            in_name, in_type = (False, False) if previous is None else (previous.in_name, previous.in_type)
            hits[found] = FieldHits(in_name, in_type, int(count), entity_id)
        return hits

    # -- ranked search ---------------------------------------------------------------

    def _official_walk(self, search: WordSearch, reach: int | None) -> list[int]:
        """Ids of the entities containing a needle, newest first: those whose name or type
        contains one first, then those whose observations do (each at its newest matching
        observation), as the SQLite backend walks its indexes; the first `reach` (or all)."""
        return official.walk(self._rows, search, reach, self._selective, self._seen("e.project"))

    def _selective(self, word: Term) -> bool:
        """Whether at most `official.WORD_CANDIDATES` entities hold the word (remembered as
        other counts are). The word index is always current here: a write rebuilds the
        documents it changed before it commits, and before it searches."""
        return self._count_term(word, official.WORD_CANDIDATES + 1) <= official.WORD_CANDIDATES

    def _count_term(self, term: Term, at_most: int) -> int:
        """How many entities the scope sees hold the term (up to `at_most`), remembered while no
        write commits.

        Counting a word found in half the memory reads thousands of index entries; queries
        repeat their common words ("what", "project"). As SQLite's `TermCounts`.
        """
        within = self._seen("e.project")
        return self._remembered(term, at_most, lambda: ranking.count_term(self._rows, term, at_most, within))

    def _remembered(self, term: Term | None, at_most: int, count: Callable[[], int]) -> int:
        """`count()`, remembered for the scope while no write commits."""
        version = self._tx.version
        if version is None:
            return count()
        key = (version, term, at_most, self._seen("e.project"))
        known = self._term_counts.get(key)  # one dict operation: safe across threads
        if known is None:
            if len(self._term_counts) >= _TERM_COUNTS_KEPT:
                self._term_counts.clear()
            known = self._term_counts[key] = count()
        return known

    def _statistics(self) -> tuple[int, float]:
        """The rows a search ranks among and their mean number of words: every entity for every
        project; else the entities the scope sees, as a memory of them alone would (as SQLite's
        word index of each project's own)."""
        if self._scope.every:
            ((entities, words),) = self._rows("SELECT entities, words FROM graphmem_state WHERE id = 1")
            delta = self._tx.delta
            rows, total = int(entities) + delta.entities, int(words) + delta.words
        else:
            seen = self._seen("project")

            def of_scope(value: str) -> Callable[[], int]:
                return lambda: int(self._rows(f"SELECT {value} FROM entities WHERE true{seen}")[0][0])

            rows = self._remembered(None, 0, of_scope("count(*)"))
            total = self._remembered(None, 1, of_scope("coalesce(sum(word_count), 0)"))
        # Each document holds one word more in SQLite's index, its project's, and BM25 counts it.
        return rows, (total / rows + PROJECT_WORDS if rows else 0.0)

    def search_entities(self, search: WordSearch) -> SearchResult:
        if self._tx.writing:
            self._refresh_words()  # the search sees what this write changed
        end = None if search.limit is None else search.offset + search.limit
        named_end = end if search.named_at_most is None else search.offset + search.named_at_most
        if end is not None and named_end is not None:
            named_end = min(end, named_end)
        newest = self._official_walk(search, RANKED_AT_MOST + 1)
        if len(newest) > RANKED_AT_MOST:
            return self._newest_official(search, end, named_end, newest)
        official = set(newest)
        rows, average = self._statistics()
        counts_all = [self._count_term(term, (rows + 1) // 2) for term in search.terms]
        kept = informative(counts_all, rows)
        terms, counts = [search.terms[i] for i in kept], [counts_all[i] for i in kept]
        everywhere = (
            bool(official)
            and bool(counts)
            and all(is_common(count, rows) for count in counts)
            and all(is_everywhere(self._count_term(term, everywhere_count(rows)), rows) for term in terms)
        )
        if everywhere:
            ranked = [(entity_id, True, 0.0) for entity_id in sorted(official)]
            page = ranked[search.offset : named_end]
            total = len(ranked) if end is None else min(end, len(ranked))
            return SearchResult(self._hits(page), max(0, total - search.offset))
        scoring = ranking.Scoring.of(terms, counts, rows, average, search.weights)
        official_scores: dict[int, float] = {}
        if terms and official:
            for entity_id, columns in self._rows(
                "SELECT id, word_columns FROM entities WHERE id = ANY(%s)", (sorted(official),)
            ):
                value = scoring.score(columns)
                if value is not None:
                    official_scores[entity_id] = value
        ranked_official = sorted(official, key=lambda i: (-official_scores.get(i, 0.0), i))
        wanted = search.max_word_matches if end is None else end - len(official)
        best: list[tuple[int, float]] = []
        if terms and wanted > 0:
            # Words each in thousands of entities tell them apart little: the newest are scored.
            choose = (
                ranking.newest_matches
                if all(count > RANKED_AT_MOST for count in counts)
                else partial(ranking.best_matches, counts=counts)
            )
            best = choose(
                self._rows,
                scoring,
                terms,
                wanted=wanted,
                exclude=official,
                entity_type=search.entity_type,
                within=self._seen("e.project"),
            )
        ranked = [(i, True, official_scores.get(i, 0.0)) for i in ranked_official]
        ranked += [(i, False, value) for i, value in best]
        page = ranked[search.offset : named_end]
        total = len(ranked) if end is None else min(end, len(ranked))
        return SearchResult(self._hits(page), max(0, total - search.offset))

    def _hits(self, page: Sequence[tuple[int, bool, float]]) -> list[SearchHit]:
        names = dict(self._rows("SELECT id, name FROM entities WHERE id = ANY(%s)", ([i for i, _, _ in page],)))
        return [SearchHit(unescape(names[i]), official, value) for i, official, value in page]

    def _newest_official(
        self, search: WordSearch, end: int | None, named_end: int | None, first: list[int]
    ) -> SearchResult:
        """The answer when more than `RANKED_AT_MOST` entities contain a query: newest first
        (see the SQLite backend's `_newest_official`). `first`: the start of that order,
        walked already, which is often all that is needed (a second walk cost 60 ms for a
        common word at 40,000 entities)."""
        if end is not None:
            reach: int | None = end
        elif named_end is not None:
            reach = max(named_end, RANKED_AT_MOST) + 1
        else:
            reach = None
        enough = reach is not None and len(first) >= reach
        ids = first[:reach] if enough else self._official_walk(search, reach)
        hits = self._hits([(entity_id, True, 0.0) for entity_id in ids[search.offset : named_end]])
        if end is not None:
            return SearchResult(hits, max(0, min(end, len(ids)) - search.offset))
        more = reach is not None and len(ids) >= reach
        return SearchResult(hits, max(0, len(ids) - search.offset), more=more)
