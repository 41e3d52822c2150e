"""SQLiteStore's searches: the official substring search through the trigram index, and ranked word search."""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from operator import itemgetter
from typing import Any

from graphmem.storage.base import (
    FieldHits,
)
from graphmem.storage.sqlite import ranking as sqlite_ranking
from graphmem.storage.sqlite.pending import has_pending_text, has_stale_words, refresh_words
from graphmem.storage.sqlite.ranking import term_query
from graphmem.storage.sqlite.reads import _Reads
from graphmem.storage.sqlite.scoping import and_visible, visible, within_words
from graphmem.storage.sqlite.trigrams import TrigramSamples, narrow_query
from graphmem.storage.words import (
    RANKED_AT_MOST,
    SearchHit,
    SearchResult,
    Term,
    WordSearch,
    everywhere_count,
    informative,
    is_common,
    is_everywhere,
    tokenize,
    word_inside,
)

# Trigram FTS5 can only look up needles of at least three characters; shorter ones scan.
_TRIGRAM = 3


_WALK_CHUNK = 128


def _fts_query(terms: Sequence[Term]) -> str | None:
    """The FTS5 query for a word search: any of the terms, each a word or a word prefix."""
    if not terms:
        return None
    return " OR ".join(map(term_query, terms))


# Up to this many entities holding a word, checking each is cheaper than the trigram walk.
_WORD_CANDIDATES = 200

# Up to this many entities in the projects a search sees (and less than half the memory), the
# official matches are found by reading their texts whole (about a millisecond a thousand
# entities) rather than by walking the whole memory's trigram index past other projects'.
_SCOPE_SCAN = 20_000

# How many of a project's texts read whole cost what walking one match of the whole memory's
# trigram index (and finding it another project's) does: measured at 1,000,000 entities.
_WALK_PER_TEXT = 4


@dataclass(frozen=True, slots=True)
class _OfficialQuery:
    """One query for the ids of entities containing a needle (the official match)."""

    sql: str
    """Rows (entity id, the row's place in the walk) of the matches."""
    params: dict[str, Any]
    newest_first: str
    """The ORDER BY that walks the rows newest first, cheaply (a rowid, walked backwards)."""
    in_names: bool
    """It looks in names and types (else in observations)."""
    pending: str | None = None
    """The same match over the rows not yet in the trigram index it reads (migration 0015),
    as the same rows, newest first; None when it reads no trigram index."""


def _official_queries(
    search: WordSearch,
    selective: Callable[[Term], bool],
    narrow: Callable[[str, str], str],
    in_scope: str = "",
    scope_ids: Callable[[str], str | None] = lambda needle: None,
) -> list[_OfficialQuery]:
    """Queries for the ids of the entities containing a needle (the official match).

    `selective(word)` says whether the word index's entities for a word are few enough to
    check each one; `narrow(table, needle)` is the trigram index query for the rows of
    `table` that may contain the needle; `in_scope`, a condition on the entity `e` that keeps
    to the transaction's projects (`scoping.and_visible`), and `scope_ids(needle)` the query of
    their entities' ids when reading every text of theirs costs less than walking the whole
    memory's matches of the needle (`_SCOPE_SCAN`). The observation queries give an entity
    once per matching row (see `SQLiteStore._walk_official`).
    """
    of_type = (" AND e.entity_type = :type" if search.entity_type is not None else "") + in_scope
    join_entity = " JOIN entities AS e ON e.id = o.entity_id" if of_type else ""
    queries: list[_OfficialQuery] = []
    for needle in dict.fromkeys(search.needles):
        params: dict[str, Any] = {"needle": needle, "type": search.entity_type}
        if not needle:
            # Every text contains the empty string.
            queries.append(
                _OfficialQuery("SELECT e.id, e.id FROM entities AS e WHERE 1" + of_type, params, "e.id", True)
            )
            continue
        pending_entities = pending_observations = None
        ids = scope_ids(needle) if needle else None
        if ids is not None:
            # A small project of a large memory: its own texts, read whole, cost less than a
            # walk of the whole memory's index past every other project's matches.
            queries.append(
                _OfficialQuery(
                    f"SELECT e.id, e.id FROM entities AS e WHERE e.id IN ({ids}) AND"
                    f" (instr(e.name_lc, :needle) > 0 OR instr(e.type_lc, :needle) > 0){of_type}",
                    params,
                    "e.id",
                    True,
                )
            )
            queries.append(
                _OfficialQuery(
                    f"SELECT o.entity_id, o.id FROM observations AS o{join_entity}"
                    f" WHERE o.entity_id IN ({ids}) AND instr(o.content_lc, :needle) > 0{of_type}",
                    params,
                    "o.id",
                    False,
                )
            )
            continue
        word = word_inside(needle)
        if word is not None and not selective(word):
            word = None  # a word in many entities ("0" in every tag): the trigrams narrow better
        if len(needle) >= _TRIGRAM and word is None:
            # The trigram index narrows the rows; instr() keeps the answer exact.
            params["name_phrase"] = narrow("entity_text", needle)
            params["phrase"] = narrow("observation_text", needle)
            entities = (
                "entity_text JOIN entities AS e ON e.id = entity_text.rowid WHERE entity_text MATCH :name_phrase AND"
            )
            entities_newest = "entity_text.rowid"
            observations = (
                "observation_text JOIN observations AS o ON o.id = observation_text.rowid"
                f"{join_entity} WHERE observation_text MATCH :phrase AND"
            )
            observations_newest = "observation_text.rowid"
            # What the trigram index does not hold yet, read whole: a few recent rows. CROSS
            # JOIN: SQLite, knowing nothing of the pending table's size, would otherwise scan
            # every row of the big one and look each up in it (70 ms at 40,000 entities).
            pending_entities = (
                "SELECT e.id, e.id FROM entity_text_pending AS p CROSS JOIN entities AS e ON e.id = p.id"
                " WHERE (instr(e.name_lc, :needle) > 0 OR instr(e.type_lc, :needle) > 0)"
                f"{of_type} ORDER BY p.id DESC"
            )
            pending_observations = (
                "SELECT o.entity_id, o.id FROM observation_text_pending AS p"
                " CROSS JOIN observations AS o ON o.id = p.id"
                f"{join_entity} WHERE instr(o.content_lc, :needle) > 0{of_type} ORDER BY p.id DESC"
            )
        elif word is None:
            entities, entities_newest = "entities AS e WHERE", "e.id"
            observations, observations_newest = f"observations AS o{join_entity} WHERE", "o.id"
        else:
            # Fewer candidates still: the entities whose names, types or observations hold
            # that word. Common trigrams ("-1" in every tag, "ent" in every "entity-N" name)
            # make the trigram index walk long lists.
            params["name_word"] = f"{{name entity_type}} : ({term_query(word)})"
            entities = (
                "entities AS e WHERE e.id IN (SELECT rowid FROM entity_words WHERE entity_words MATCH :name_word) AND"
            )
            entities_newest = "e.id"
            params["word"] = f"observations : ({term_query(word)})"
            observations = (
                f"observations AS o{join_entity} WHERE o.entity_id IN"
                " (SELECT rowid FROM entity_words WHERE entity_words MATCH :word) AND"
            )
            observations_newest = "o.id"
        queries.append(
            _OfficialQuery(
                f"SELECT e.id, {entities_newest} FROM {entities}"
                f" (instr(e.name_lc, :needle) > 0 OR instr(e.type_lc, :needle) > 0){of_type}",
                params,
                entities_newest,
                True,
                pending_entities,
            )
        )
        queries.append(
            _OfficialQuery(
                f"SELECT o.entity_id, {observations_newest} FROM {observations} instr(o.content_lc, :needle) > 0"
                + of_type,
                params,
                observations_newest,
                False,
                pending_observations,
            )
        )
    return queries


def _newest_first(queries: list[_OfficialQuery]) -> list[_OfficialQuery]:
    """The queries in the order of the newest-first walk: names and types before observations."""
    return sorted(queries, key=lambda query: not query.in_names)


class _Search(_Reads):
    """The searches of `SQLiteStore`."""

    @cached_property
    def _trigram_samples(self) -> TrigramSamples:
        """Samples of the trigram-indexed texts, which choose what the trigram index reads."""
        return TrigramSamples()

    def find_text(self, needle: str) -> dict[str, FieldHits]:
        if len(needle) >= _TRIGRAM:
            # The FTS match narrows the rows through the index (by the needle's rarest
            # trigrams); instr() keeps the answer exact whatever the tokenizer does.
            entity_rows = self._conn.execute(
                "SELECT e.name, instr(e.name_lc, ?1) > 0, instr(e.type_lc, ?1) > 0, e.id"
                " FROM entity_text JOIN entities AS e ON e.id = entity_text.rowid"
                f" WHERE entity_text MATCH ?2{and_visible(self._scope, 'e.project')}",
                (needle, narrow_query(self._conn, self._trigram_samples, "entity_text", needle)),
            ).fetchall()
            observation_rows = self._conn.execute(
                "SELECT e.name, count(*), e.id FROM observation_text"
                " JOIN observations AS o ON o.id = observation_text.rowid"
                " JOIN entities AS e ON e.id = o.entity_id"
                " WHERE observation_text MATCH ?2 AND instr(o.content_lc, ?1) > 0"
                f"{and_visible(self._scope, 'e.project')} GROUP BY o.entity_id",
                (needle, narrow_query(self._conn, self._trigram_samples, "observation_text", needle)),
            ).fetchall()
            entity_rows += self._pending_entity_rows(needle)
            observation_rows = self._with_pending_observations(needle, observation_rows)
        else:
            entity_rows = self._conn.execute(
                "SELECT name, instr(name_lc, ?1) > 0, instr(type_lc, ?1) > 0, id FROM entities"
                f" WHERE (instr(name_lc, ?1) > 0 OR instr(type_lc, ?1) > 0){and_visible(self._scope, 'project')}",
                (needle,),
            ).fetchall()
            observation_rows = self._conn.execute(
                "SELECT e.name, count(*), e.id FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
                f" WHERE instr(o.content_lc, ?1) > 0{and_visible(self._scope, 'e.project')} GROUP BY o.entity_id",
                (needle,),
            ).fetchall()
        hits: dict[str, FieldHits] = {}
        for name, in_name, in_type, entity_id in entity_rows:
            if in_name or in_type:
                hits[name] = FieldHits(bool(in_name), bool(in_type), 0, entity_id)
        for name, count, entity_id in observation_rows:
            previous = hits.get(name)
            if previous is None:
                hits[name] = FieldHits(False, False, count, entity_id)
            else:
                hits[name] = FieldHits(previous.in_name, previous.in_type, count, entity_id)
        return hits

    def _pending_entity_rows(self, needle: str) -> list[tuple[str, int, int, int]]:
        """`find_text`'s entity rows among the entities not yet in the trigram index."""
        if not has_pending_text(self._conn, "entity_text"):
            return []
        return self._conn.execute(
            "SELECT e.name, instr(e.name_lc, ?1) > 0, instr(e.type_lc, ?1) > 0, e.id"
            " FROM entity_text_pending AS p CROSS JOIN entities AS e ON e.id = p.id"
            f" WHERE (instr(e.name_lc, ?1) > 0 OR instr(e.type_lc, ?1) > 0){and_visible(self._scope, 'e.project')}",
            (needle,),
        ).fetchall()

    def _with_pending_observations(self, needle: str, rows: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """`find_text`'s observation rows (name, matching facts, id) with the facts not yet in
        the trigram index counted too."""
        if not has_pending_text(self._conn, "observation_text"):
            return rows
        counts = {entity_id: (name, count) for name, count, entity_id in rows}
        for name, count, entity_id in self._conn.execute(
            "SELECT e.name, count(*), e.id FROM observation_text_pending AS p"
            " CROSS JOIN observations AS o ON o.id = p.id JOIN entities AS e ON e.id = o.entity_id"
            f" WHERE instr(o.content_lc, ?1) > 0{and_visible(self._scope, 'e.project')} GROUP BY o.entity_id",
            (needle,),
        ):
            counts[entity_id] = (name, counts.get(entity_id, (name, 0))[1] + count)
        return [(name, count, entity_id) for entity_id, (name, count) in counts.items()]

    def search_entities(self, search: WordSearch) -> SearchResult:
        if self._writing:
            # A search inside a write transaction sees what the transaction wrote. FTS5
            # writes its statistics only at commit, so it ranks alone, and nothing is remembered.
            self._refresh_word_index()
            # The index holds one row per entity: the triggers' count saves a scan, except
            # inside bulk_insert, which suspends them.
            if self._bulk:
                (rows,) = self._conn.execute("SELECT count(*) FROM entities").fetchone()
            else:
                rows = self._entity_count(None)
            words = None
        else:
            rows, words = sqlite_ranking.index_size(self._conn, "entity_words")
            (version,) = self._conn.execute("PRAGMA data_version").fetchone()
            self._term_counts.valid_for((version, rows))
        end = None if search.limit is None else search.offset + search.limit
        # The order is known to here; past it, only its length is (see named_at_most).
        named_end = end if search.named_at_most is None else search.offset + search.named_at_most
        if end is not None and named_end is not None:
            named_end = min(end, named_end)
        newest, complete = self._official_ids(search, RANKED_AT_MOST)
        if not complete:
            return self._newest_official(search, end, named_end, newest)
        official = set(newest)
        terms, counts = self._informative_terms(search.terms, rows)
        query = _fts_query(terms)
        # Words found everywhere ("#0-1" is "0" and "1", in every entity's tag) cannot tell
        # entities apart: they neither order the whole-query matches nor add to them.
        everywhere = bool(official) and bool(counts) and self._only_everywhere(terms, counts, rows)
        rank_by = None if everywhere else query
        ranked = [(i, True, score) for i, score in self._rank_official(search, rank_by, official, named_end)]
        wanted = 0 if everywhere else search.max_word_matches if end is None else end - len(official)
        best: list[tuple[int, float]] = []
        if query and wanted > 0:
            pruned = None
            if words is not None:
                # Words each in more entities than are worth scoring are scored among the newest.
                choose = (
                    sqlite_ranking.newest_matches
                    if all(count > RANKED_AT_MOST for count in counts)
                    else sqlite_ranking.best_matches
                )
                pruned = choose(
                    self._conn,
                    terms,
                    counts,
                    rows,
                    words,
                    search.weights,
                    wanted,
                    official,
                    search.entity_type,
                    within_words(self._scope),
                )
            best = pruned if pruned is not None else self._best_words(search, query, official, wanted)
        length = len(official) + len(best)
        if len(ranked) == len(official):
            ranked += [(i, False, score) for i, score in best]
        page = ranked[search.offset : named_end]
        hits = self._hits(page)
        total = max(0, (length if end is None else min(end, length)) - search.offset)
        return SearchResult(hits, total)

    def _hits(self, page: Sequence[tuple[int, bool, float]]) -> list[SearchHit]:
        names = dict(
            self._conn.execute(
                "SELECT id, name FROM entities WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([i for i, _, _ in page]),),
            ).fetchall()
        )
        return [SearchHit(names[i], is_official, score) for i, is_official, score in page]

    def _newest_official(
        self, search: WordSearch, end: int | None, named_end: int | None, first: list[int]
    ) -> SearchResult:
        """The answer when more than `RANKED_AT_MOST` entities contain a query: newest first.

        Each match is found walking an index from its newest row: first the entities
        whose name or type contains a query, then those whose observations do, each where
        its most recent matching row is. A page costs what it shows, not what matches.
        Without a limit the walk counts one past `RANKED_AT_MOST` (or the names wanted),
        and `more` says that it stopped there. `first`: the start of that order, found
        already (by `_official_ids`), which is often all that is needed.
        """
        if end is not None:
            reach: int | None = end
        elif named_end is not None:
            reach = max(named_end, RANKED_AT_MOST) + 1
        else:
            reach = None  # every match asked for by name: walk them all
        enough = reach is not None and len(first) >= reach
        ids = first[:reach] if enough else self._walk_official(search, reach, first)
        hits = self._hits([(entity_id, True, 0.0) for entity_id in ids[search.offset : named_end]])
        if end is not None:
            return SearchResult(hits, max(0, min(end, len(ids)) - search.offset))
        more = reach is not None and len(ids) >= reach
        return SearchResult(hits, max(0, len(ids) - search.offset), more=more)

    def _rank_official(
        self, search: WordSearch, query: str | None, official: set[int], upto: int | None
    ) -> list[tuple[int, float]]:
        """The official matches best first (by score, then creation), the first `upto` of them.

        When only a few of many are wanted (a common word), SQLite ranks and cuts them,
        so the thousands past the cut are neither sorted nor named in Python.
        """
        if upto is not None and upto < len(official) and query:
            top = self._conn.execute(
                "SELECT rowid, -bm25(entity_words, ?, ?, ?, ?, 0) AS score FROM entity_words"
                " WHERE entity_words MATCH ? AND +rowid IN (SELECT value FROM json_each(?))"
                " ORDER BY score DESC, rowid LIMIT ?",
                (*search.weights, f"({query}){within_words(self._scope)}", json.dumps(sorted(official)), upto),
            ).fetchall()
            if len(top) == upto:
                return top
            # Every scored match is in `top`: the unscored ones follow in creation order.
            seen = {entity_id for entity_id, _ in top}
            return top + [(i, 0.0) for i in sorted(official - seen)[: upto - len(top)]]
        scores = self._scores(search, query, official) if query and official else {}
        ordered = sorted(official, key=lambda i: (-scores.get(i, 0.0), i))
        return [(i, scores.get(i, 0.0)) for i in ordered[:upto]]

    def _only_everywhere(self, terms: Sequence[Term], counts: Sequence[int], rows: int) -> bool:
        """Whether every term is `is_everywhere`; counted further only when all are common."""
        if not all(is_common(count, rows) for count in counts):
            return False
        at_least = everywhere_count(rows)
        return all(is_everywhere(self._count_term(term, at_least), rows) for term in terms)

    def _informative_terms(self, terms: Sequence[Term], rows: int) -> tuple[list[Term], list[int]]:
        """The terms a query is ranked by (`words.informative`: none found nowhere, none
        found in half of the rows or more unless all found are), and how many rows each
        matches (counting stops at half: past that a term is common)."""
        counts = [self._count_term(term, (rows + 1) // 2) for term in terms]
        kept = informative(counts, rows)
        return [terms[index] for index in kept], [counts[index] for index in kept]

    def _count_term(self, term: Term, at_most: int) -> int:
        if self._writing:
            # Counts remembered before this write may be stale now.
            return sqlite_ranking.count_term(self._conn, term, at_most)
        return self._term_counts.count(self._conn, term, at_most)

    def _selective_word(self, word: Term) -> bool:
        """Whether at most `_WORD_CANDIDATES` entities hold `word` (counted once per index state).

        Never while some entity's word document is out of date (a reader that could not
        bring the index up to date, see `SQLiteStore.read`): the index could miss it.
        """
        if has_stale_words(self._conn):
            return False
        return self._count_term(word, _WORD_CANDIDATES + 1) <= _WORD_CANDIDATES

    def _official_ids(self, search: WordSearch, cap: int) -> tuple[list[int], bool]:
        """Ids of the entities containing a needle, newest first (see `_newest_official`),
        and whether that is all of them: it stops past `cap`."""
        found = self._walk_official(search, cap + 1)
        return found, len(found) <= cap

    def _walk_official(self, search: WordSearch, reach: int | None, start: Sequence[int] = ()) -> list[int]:
        """The first `reach` (or all) ids of the entities containing a needle, newest first.

        `start`: the beginning of that order, when known. An entity with several matching
        rows is met again further on: Python keeps its first, newest place, which costs a
        third of what a DISTINCT does in SQLite (a temporary b-tree of every id).
        """
        found = dict.fromkeys(start)
        queries = _official_queries(
            search,
            self._selective_word,
            partial(narrow_query, self._conn, self._trigram_samples),
            and_visible(self._scope, "e.project"),
            self._small_scope_ids(),
        )
        for official in _newest_first(queries):
            if reach is not None and len(found) >= reach:
                break
            pending = (
                self._conn.execute(official.pending, official.params).fetchall() if official.pending is not None else []
            )
            cursor = self._conn.execute(f"{official.sql} ORDER BY {official.newest_first} DESC", official.params)
            try:
                # Both are newest first: merged, they are the walk the index would give.
                chunks = (
                    iter(partial(cursor.fetchmany, _WALK_CHUNK), [])
                    if not pending
                    else [heapq.merge(pending, cursor, key=itemgetter(1), reverse=True)]
                )
                for chunk in chunks:
                    for entity_id, _ in chunk:
                        found[entity_id] = None
                        if reach is not None and len(found) >= reach:
                            break
                    if reach is not None and len(found) >= reach:
                        break
            finally:
                cursor.close()
        return list(found)

    def _small_scope_ids(self) -> Callable[[str], str | None]:
        """For a needle, the query of the ids of the entities the scope sees when reading their
        texts costs less than walking the needle's matches in the whole memory: they are at most
        `_SCOPE_SCAN`, and the needle's words are in more entities than that; None otherwise
        (and always for every project)."""
        if self._scope.every:
            return lambda needle: None
        seen = visible(self._scope, "project")
        (count,) = self._conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM entities WHERE {seen} LIMIT ?)", (_SCOPE_SCAN + 1,)
        ).fetchone()
        if count > _SCOPE_SCAN:
            return lambda needle: None

        def ids(needle: str) -> str | None:
            words = tokenize(needle)
            # The rarest word of the needle bounds how many entities hold it (a prefix of each,
            # since a substring may end inside a word): a rough count, which only chooses a path.
            rarest = min((self._count_term(Term(word, prefix=True), count + 1) for word in words), default=count + 1)
            # Reading a text whole costs about what walking four matches of the index does.
            return f"SELECT id FROM entities WHERE {seen}" if rarest * _WALK_PER_TEXT > count else None

        return ids

    def _scores(self, search: WordSearch, query: str, ids: set[int]) -> dict[int, float]:
        # "+rowid" keeps SQLite from running the FTS query once per id: one pass over
        # the query's matches, and bm25() only for the rows asked about.
        rows = self._conn.execute(
            "SELECT rowid, -bm25(entity_words, ?, ?, ?, ?, 0) FROM entity_words"
            " WHERE entity_words MATCH ? AND +rowid IN (SELECT value FROM json_each(?))",
            # Within the scope's projects too: FTS5 then reads only their rows of the query's words.
            (*search.weights, f"({query}){within_words(self._scope)}", json.dumps(sorted(ids))),
        )
        return dict(rows.fetchall())

    def _word_matches_sql(self, search: WordSearch) -> tuple[str, list[Any]]:
        sql = "SELECT entity_words.rowid, -bm25(entity_words, ?, ?, ?, ?, 0) AS score FROM entity_words"
        params: list[Any] = [*search.weights]
        if search.entity_type is not None:
            sql += " JOIN entities AS e ON e.id = entity_words.rowid AND e.entity_type = ?"
            params.append(search.entity_type)
        return sql + " WHERE entity_words MATCH ?", params

    def _best_words(self, search: WordSearch, query: str, exclude: set[int], limit: int) -> list[tuple[int, float]]:
        """The best `limit` word matches outside `exclude`, SQLite ranking and cutting them."""
        sql, params = self._word_matches_sql(search)
        sql += (
            " AND entity_words.rowid NOT IN (SELECT value FROM json_each(?))"
            " ORDER BY score DESC, entity_words.rowid LIMIT ?"
        )
        scoped = f"({query}){within_words(self._scope)}"
        return self._conn.execute(sql, (*params, scoped, json.dumps(sorted(exclude)), limit)).fetchall()

    def _refresh_word_index(self) -> None:
        """Rebuild the word-index documents of the entities the triggers marked as changed."""
        if has_stale_words(self._conn):
            refresh_words(self._conn)
