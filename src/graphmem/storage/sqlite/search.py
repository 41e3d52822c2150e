"""SQLiteStore's searches: the official substring search through the trigram index, and ranked word search."""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import chain
from operator import itemgetter
from typing import Any

from graphmem.core.projects import SHARED
from graphmem.storage.base import (
    FieldHits,
)
from graphmem.storage.sqlite import ranking as sqlite_ranking
from graphmem.storage.sqlite.pending import has_pending_text, has_stale_words, refresh_words
from graphmem.storage.sqlite.project_words import word_index_of
from graphmem.storage.sqlite.ranking import term_query
from graphmem.storage.sqlite.reads import _Reads
from graphmem.storage.sqlite.scoping import WORDS, WordIndex, and_visible, marks_of, visible, within_marks
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

# Up to this many entities in the shared space, a search in a project reads their texts whole
# for the official match (about a millisecond a thousand entities) rather than walking the
# whole memory's trigram index for the shared space's unmarked texts (migration 18).
_SHARED_SCAN = 1_000


@dataclass(frozen=True, slots=True)
class _OfficialQuery:
    """One query for the ids of entities containing a needle (the official match)."""

    sql: str
    """Rows (entity id, the row's place in the walk) of the matches, newest first."""
    params: dict[str, Any]
    in_names: bool
    """It looks in names and types (else in observations)."""
    beside: tuple[str, ...] = ()
    """More rows of the same match, newest first, merged with those of `sql`: the rows not yet
    in the trigram index it reads (migration 0015), the shared space's beside a project's."""


@dataclass(frozen=True, slots=True)
class _ScopedText:
    """How the official match keeps to a scope that does not see every project (migration 18)."""

    marks: list[str]
    """The trigram-index marks of the scope's projects (the shared space has none)."""
    shared: str | None
    """How the shared space's texts are read: "scan" (whole), "walk" (the whole memory's
    trigram index, kept to the shared space), or None when the scope sees none of them."""


def _official_queries(
    search: WordSearch,
    selective: Callable[[Term], bool],
    narrow: Callable[[str, str], str],
    in_scope: str = "",
    scoped: _ScopedText | None = None,
    word_index: WordIndex = WORDS,
) -> list[_OfficialQuery]:
    """Queries for the ids of the entities containing a needle (the official match).

    `selective(word)` says whether the word index's entities for a word are few enough to
    check each one; `narrow(table, needle)` is the trigram index query for the rows of
    `table` that may contain the needle; `in_scope`, a condition on the entity `e` that keeps
    to the transaction's projects (`scoping.and_visible`), `word_index` the word index
    that holds them (project_words.py), and `scoped` how the trigram indexes keep to it
    (None: the scope sees every project). The observation queries give an entity once per
    matching row (see `SQLiteStore._walk_official`).
    """
    of_type = (" AND e.entity_type = :type" if search.entity_type is not None else "") + in_scope
    join_entity = " JOIN entities AS e ON e.id = o.entity_id" if of_type else ""
    names_match = "(instr(e.name_lc, :needle) > 0 OR instr(e.type_lc, :needle) > 0)"
    queries: list[_OfficialQuery] = []
    for needle in dict.fromkeys(search.needles):
        params: dict[str, Any] = {"needle": needle, "type": search.entity_type}
        if not needle:
            # Every text contains the empty string.
            every = f"SELECT e.id, e.id FROM entities AS e WHERE 1{of_type} ORDER BY e.id DESC"
            queries.append(_OfficialQuery(every, params, True))
            continue
        word = word_inside(needle)
        if word is not None and not selective(word):
            word = None  # a word in many entities ("0" in every tag): the trigrams narrow better
        if len(needle) >= _TRIGRAM and word is None:
            # The trigram index narrows the rows; instr() keeps the answer exact.
            name_phrase: str | None = narrow("entity_text", needle)
            phrase: str | None = narrow("observation_text", needle)
            # What the trigram index does not hold yet, read whole: a few recent rows. CROSS
            # JOIN: SQLite, knowing nothing of the pending table's size, would otherwise scan
            # every row of the big one and look each up in it (70 ms at 40,000 entities).
            entities_beside = [
                "SELECT e.id, e.id FROM entity_text_pending AS p CROSS JOIN entities AS e ON e.id = p.id"
                f" WHERE {names_match}{of_type} ORDER BY p.id DESC"
            ]
            observations_beside = [
                "SELECT o.entity_id, o.id FROM observation_text_pending AS p"
                " CROSS JOIN observations AS o ON o.id = p.id"
                f"{join_entity} WHERE instr(o.content_lc, :needle) > 0{of_type} ORDER BY p.id DESC"
            ]
            if scoped is not None:
                # The scope's projects by their marks: FTS5 reads only what they hold.
                if scoped.marks:
                    name_phrase = f"{name_phrase}{within_marks(scoped.marks)}"
                    phrase = f"{phrase}{within_marks(scoped.marks)}"
                else:
                    name_phrase = phrase = None
                # The shared space's texts, which have no mark, beside them.
                shared_names, shared_observations = _shared_queries(scoped.shared, names_match, of_type)
                entities_beside += shared_names
                observations_beside += shared_observations
                if scoped.shared == "walk":
                    params["shared_name_phrase"] = narrow("entity_text", needle)
                    params["shared_phrase"] = narrow("observation_text", needle)
            params["name_phrase"], params["phrase"] = name_phrase, phrase
            no_rows = "SELECT NULL, NULL WHERE 0"
            queries.append(
                _OfficialQuery(
                    no_rows
                    if name_phrase is None
                    else "SELECT e.id, entity_text.rowid FROM entity_text"
                    " JOIN entities AS e ON e.id = entity_text.rowid"
                    f" WHERE entity_text MATCH :name_phrase AND {names_match}{of_type} ORDER BY entity_text.rowid DESC",
                    params,
                    True,
                    tuple(entities_beside),
                )
            )
            queries.append(
                _OfficialQuery(
                    no_rows
                    if phrase is None
                    else "SELECT o.entity_id, observation_text.rowid FROM observation_text"
                    f" JOIN observations AS o ON o.id = observation_text.rowid{join_entity}"
                    " WHERE observation_text MATCH :phrase AND instr(o.content_lc, :needle) > 0"
                    f"{of_type} ORDER BY observation_text.rowid DESC",
                    params,
                    False,
                    tuple(observations_beside),
                )
            )
            continue
        if word is None:
            entities, observations = "entities AS e WHERE", f"observations AS o{join_entity} WHERE"
        else:
            # Fewer candidates still: the entities whose names, types or observations hold
            # that word. Common trigrams ("-1" in every tag, "ent" in every "entity-N" name)
            # make the trigram index walk long lists.
            params["name_word"] = word_index.query(f"{{name entity_type}} : ({term_query(word)})")
            holding = f"SELECT rowid FROM {word_index.table} WHERE {word_index.table} MATCH"
            entities = f"entities AS e WHERE e.id IN ({holding} :name_word) AND"
            params["word"] = word_index.query(f"observations : ({term_query(word)})")
            observations = f"observations AS o{join_entity} WHERE o.entity_id IN ({holding} :word) AND"
        queries.append(
            _OfficialQuery(f"SELECT e.id, e.id FROM {entities} {names_match}{of_type} ORDER BY e.id DESC", params, True)
        )
        queries.append(
            _OfficialQuery(
                f"SELECT o.entity_id, o.id FROM {observations} instr(o.content_lc, :needle) > 0{of_type}"
                " ORDER BY o.id DESC",
                params,
                False,
            )
        )
    return queries


def _shared_queries(how: str | None, names_match: str, of_type: str) -> tuple[list[str], list[str]]:
    """The queries of the shared space's official matches beside a project's (`_ScopedText.shared`):
    its names and types, and its observations, each newest first."""
    if how == "scan":
        return (
            [
                "SELECT e.id, e.id FROM entities AS e"
                f" WHERE e.project = '' AND {names_match}{of_type} ORDER BY e.id DESC"
            ],
            [
                "SELECT o.entity_id, o.id FROM entities AS e JOIN observations AS o ON o.entity_id = e.id"
                f" WHERE e.project = '' AND instr(o.content_lc, :needle) > 0{of_type} ORDER BY o.id DESC"
            ],
        )
    if how == "walk":
        # The whole memory's trigram index, unmarked texts and marked alike, kept to the shared space.
        return (
            [
                "SELECT e.id, entity_text.rowid FROM entity_text JOIN entities AS e ON e.id = entity_text.rowid"
                f" WHERE entity_text MATCH :shared_name_phrase AND e.project = '' AND {names_match}{of_type}"
                " ORDER BY entity_text.rowid DESC"
            ],
            [
                "SELECT o.entity_id, observation_text.rowid FROM observation_text"
                " JOIN observations AS o ON o.id = observation_text.rowid JOIN entities AS e ON e.id = o.entity_id"
                f" WHERE observation_text MATCH :shared_phrase AND e.project = '' AND instr(o.content_lc, :needle) > 0"
                f"{of_type} ORDER BY observation_text.rowid DESC"
            ],
        )
    return [], []


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
                f" WHERE (instr(name_lc, ?1) > 0 OR instr(type_lc, ?1) > 0){self._narrowed('project')}",
                (needle,),
            ).fetchall()
            observation_rows = self._conn.execute(
                "SELECT e.name, count(*), e.id FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
                f" WHERE instr(o.content_lc, ?1) > 0{self._narrowed('e.project')} GROUP BY o.entity_id",
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
            f" WHERE (instr(e.name_lc, ?1) > 0 OR instr(e.type_lc, ?1) > 0){self._narrowed('e.project')}",
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
            f" WHERE instr(o.content_lc, ?1) > 0{self._narrowed('e.project')} GROUP BY o.entity_id",
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
            (version,) = self._conn.execute("PRAGMA data_version").fetchone()
            self._term_counts.valid_for(version)
        word_index = self._word_index()
        if not self._writing:
            rows, words = sqlite_ranking.index_size(self._conn, word_index.table)
        elif word_index.table != WORDS.table:
            # A scope's own index holds what the scope sees.
            seen = visible(self._scope, "project")
            (rows,) = self._conn.execute(f"SELECT count(*) FROM entities WHERE {seen}").fetchone()
        end = None if search.limit is None else search.offset + search.limit
        # The order is known to here; past it, only its length is (see named_at_most).
        named_end = end if search.named_at_most is None else search.offset + search.named_at_most
        if end is not None and named_end is not None:
            named_end = min(end, named_end)
        newest, complete = self._official_ids(search, RANKED_AT_MOST, word_index)
        if not complete:
            return self._newest_official(search, end, named_end, newest)
        official = set(newest)
        terms, counts = self._informative_terms(search.terms, rows, word_index)
        query = _fts_query(terms)
        # Words found everywhere ("#0-1" is "0" and "1", in every entity's tag) cannot tell
        # entities apart: they neither order the whole-query matches nor add to them.
        everywhere = bool(official) and bool(counts) and self._only_everywhere(terms, counts, rows, word_index)
        rank_by = None if everywhere else query
        ranked = [
            (i, True, score) for i, score in self._rank_official(search, rank_by, official, named_end, word_index)
        ]
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
                    word_index,
                )
            best = pruned if pruned is not None else self._best_words(search, query, official, wanted, word_index)
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
        self, search: WordSearch, query: str | None, official: set[int], upto: int | None, word_index: WordIndex
    ) -> list[tuple[int, float]]:
        """The official matches best first (by score, then creation), the first `upto` of them.

        When only a few of many are wanted (a common word), SQLite ranks and cuts them,
        so the thousands past the cut are neither sorted nor named in Python.
        """
        if upto is not None and upto < len(official) and query:
            table = word_index.table
            top = self._conn.execute(
                f"SELECT rowid, -bm25({table}, ?, ?, ?, ?, 0) AS score FROM {table}"
                f" WHERE {table} MATCH ? AND +rowid IN (SELECT value FROM json_each(?))"
                " ORDER BY score DESC, rowid LIMIT ?",
                (*search.weights, word_index.query(query), json.dumps(sorted(official)), upto),
            ).fetchall()
            if len(top) == upto:
                return top
            # Every scored match is in `top`: the unscored ones follow in creation order.
            seen = {entity_id for entity_id, _ in top}
            return top + [(i, 0.0) for i in sorted(official - seen)[: upto - len(top)]]
        scores = self._scores(search, query, official, word_index) if query and official else {}
        ordered = sorted(official, key=lambda i: (-scores.get(i, 0.0), i))
        return [(i, scores.get(i, 0.0)) for i in ordered[:upto]]

    def _only_everywhere(self, terms: Sequence[Term], counts: Sequence[int], rows: int, word_index: WordIndex) -> bool:
        """Whether every term is `is_everywhere`; counted further only when all are common."""
        if not all(is_common(count, rows) for count in counts):
            return False
        at_least = everywhere_count(rows)
        return all(is_everywhere(self._count_term(term, at_least, word_index), rows) for term in terms)

    def _informative_terms(
        self, terms: Sequence[Term], rows: int, word_index: WordIndex
    ) -> tuple[list[Term], list[int]]:
        """The terms a query is ranked by (`words.informative`: none found nowhere, none
        found in half of the rows or more unless all found are), and how many rows each
        matches (counting stops at half: past that a term is common)."""
        counts = [self._count_term(term, (rows + 1) // 2, word_index) for term in terms]
        kept = informative(counts, rows)
        return [terms[index] for index in kept], [counts[index] for index in kept]

    def _count_term(self, term: Term, at_most: int, word_index: WordIndex) -> int:
        if self._writing:
            # Counts remembered before this write may be stale now.
            return sqlite_ranking.count_term(self._conn, term, at_most, word_index)
        return self._term_counts.count(self._conn, term, at_most, word_index)

    def _narrowed(self, column: str) -> str:
        """` AND` the scope's projects, for a scan by text: the project index may narrow it
        (a project of 2,000 entities in a memory of a million), as `and_visible` never does."""
        return "" if self._scope.every else f" AND {visible(self._scope, column)}"

    def _word_index(self) -> WordIndex:
        """The word index a search in the transaction's scope reads (project_words.py)."""
        find = partial(word_index_of, self._conn, self._scope)
        return find() if self._writing else self._term_counts.fact(("word index", self._scope), find)

    def _selective_word(self, word_index: WordIndex, word: Term) -> bool:
        """Whether at most `_WORD_CANDIDATES` entities the scope sees hold `word` (counted once per index state).

        Never while some entity's word document is out of date (a reader that could not
        bring the index up to date, see `SQLiteStore.read`): the index could miss it.
        """
        if has_stale_words(self._conn):
            return False
        return self._count_term(word, _WORD_CANDIDATES + 1, word_index) <= _WORD_CANDIDATES

    def _official_ids(self, search: WordSearch, cap: int, word_index: WordIndex) -> tuple[list[int], bool]:
        """Ids of the entities containing a needle, newest first (see `_newest_official`),
        and whether that is all of them: it stops past `cap`."""
        found = self._walk_official(search, cap + 1, (), word_index)
        return found, len(found) <= cap

    def _walk_official(
        self,
        search: WordSearch,
        reach: int | None,
        start: Sequence[int] = (),
        word_index: WordIndex | None = None,
    ) -> list[int]:
        """The first `reach` (or all) ids of the entities containing a needle, newest first.

        `start`: the beginning of that order, when known. An entity with several matching
        rows is met again further on: Python keeps its first, newest place, which costs a
        third of what a DISTINCT does in SQLite (a temporary b-tree of every id).
        """
        found = dict.fromkeys(start)
        word_index = word_index or self._word_index()
        queries = _official_queries(
            search,
            partial(self._selective_word, word_index),
            partial(narrow_query, self._conn, self._trigram_samples),
            and_visible(self._scope, "e.project"),
            self._scoped_text(),
            word_index,
        )
        for official in _newest_first(queries):
            if reach is not None and len(found) >= reach:
                break
            cursors = [self._conn.execute(sql, official.params) for sql in (official.sql, *official.beside)]
            try:
                # Each is newest first: merged, they are the walk one index would give.
                rows = (
                    chain.from_iterable(iter(partial(cursors[0].fetchmany, _WALK_CHUNK), []))
                    if len(cursors) == 1
                    else heapq.merge(*cursors, key=itemgetter(1), reverse=True)
                )
                for entity_id, _ in rows:
                    found[entity_id] = None
                    if reach is not None and len(found) >= reach:
                        break
            finally:
                for cursor in cursors:
                    cursor.close()
        return list(found)

    def _scoped_text(self) -> _ScopedText | None:
        """How the official match keeps to the scope (`_ScopedText`); None for every project."""
        if self._scope.every:
            return None
        if self._writing:
            return self._find_scoped_text()
        return self._term_counts.fact(("scoped text", self._scope), self._find_scoped_text)

    def _find_scoped_text(self) -> _ScopedText:
        marks = marks_of(self._conn, self._scope) or []
        shared = None
        if SHARED in self._scope.visible:
            (count,) = self._conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM entities WHERE project = '' LIMIT ?)", (_SHARED_SCAN + 1,)
            ).fetchone()
            shared = None if count == 0 else "scan" if count <= _SHARED_SCAN else "walk"
        return _ScopedText(marks, shared)

    def _scores(self, search: WordSearch, query: str, ids: set[int], word_index: WordIndex) -> dict[int, float]:
        # "+rowid" keeps SQLite from running the FTS query once per id: one pass over
        # the query's matches, and bm25() only for the rows asked about.
        table = word_index.table
        rows = self._conn.execute(
            f"SELECT rowid, -bm25({table}, ?, ?, ?, ?, 0) FROM {table}"
            f" WHERE {table} MATCH ? AND +rowid IN (SELECT value FROM json_each(?))",
            (*search.weights, word_index.query(query), json.dumps(sorted(ids))),
        )
        return dict(rows.fetchall())

    def _best_words(
        self, search: WordSearch, query: str, exclude: set[int], limit: int, word_index: WordIndex
    ) -> list[tuple[int, float]]:
        """The best `limit` word matches outside `exclude`, SQLite ranking and cutting them."""
        table = word_index.table
        sql = f"SELECT {table}.rowid, -bm25({table}, ?, ?, ?, ?, 0) AS score FROM {table}"
        params: list[Any] = [*search.weights]
        if search.entity_type is not None:
            sql += f" JOIN entities AS e ON e.id = {table}.rowid AND e.entity_type = ?"
            params.append(search.entity_type)
        sql += (
            f" WHERE {table} MATCH ? AND {table}.rowid NOT IN (SELECT value FROM json_each(?))"
            f" ORDER BY score DESC, {table}.rowid LIMIT ?"
        )
        return self._conn.execute(
            sql, (*params, word_index.query(query), json.dumps(sorted(exclude)), limit)
        ).fetchall()

    def _refresh_word_index(self) -> None:
        """Rebuild the word-index documents of the entities the triggers marked as changed."""
        if has_stale_words(self._conn):
            refresh_words(self._conn)
