"""The graph's searches: ranked names under the search policy, and the entities they name."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphmem.core.errors import InvalidInputError
from graphmem.core.models import (
    Entity,
    Graph,
    GraphPage,
)
from graphmem.domain import search
from graphmem.domain.fusion import CANDIDATES, NEAR_CANDIDATES, SEARCH_MODES, FusedHit, Fusion, fuse, meaning_counts
from graphmem.domain.meaning import Meaning
from graphmem.domain.reading import Reads
from graphmem.storage.vectors import NearEntity, VectorStore

__all__ = ["RankedNames", "Searches"]


@dataclass(frozen=True, slots=True)
class RankedNames:
    """A search's answer by name, best first (perhaps only its start), and its whole length."""

    names: tuple[str, ...]
    total: int
    more: bool = False
    """More entities match than `total` counts (see `SearchResult.more`)."""
    partly_embedded: bool = False
    """Meaning took part in the ranking while some of the memory's texts still waited for their
    vectors (never set when the words alone answered)."""


@dataclass(frozen=True, slots=True)
class _IndexedGraph:
    """A small memory's whole graph in wire form, indexed by name: the entities of each name,
    and the positions of the relations touching it."""

    version: Hashable
    entity_count: int
    entities_by_name: dict[str, list[dict[str, Any]]]
    relations: list[dict[str, Any]]
    relations_by_name: dict[str, list[int]]

    @classmethod
    def of(cls, version: Hashable, wire: dict[str, list[dict[str, Any]]]) -> _IndexedGraph:
        entities_by_name: dict[str, list[dict[str, Any]]] = {}
        for entity in wire["entities"]:
            # A JSONL file may hold two entities under one name; the official search returns both.
            entities_by_name.setdefault(entity["name"], []).append(entity)
        relations_by_name: dict[str, list[int]] = {}
        for position, relation in enumerate(wire["relations"]):
            relations_by_name.setdefault(relation["from"], []).append(position)
            if relation["to"] != relation["from"]:
                relations_by_name.setdefault(relation["to"], []).append(position)
        return cls(version, len(wire["entities"]), entities_by_name, wire["relations"], relations_by_name)


class Searches(Reads):
    """The searches of `KnowledgeGraph`: ranked names, and the entities they name."""

    _indexed: _IndexedGraph | None
    """A small memory's whole graph indexed by name, and the memory version it was read at."""
    meaning: Meaning
    """Search by meaning: the model and whether it is on for this memory."""
    fusion: Fusion
    """How a hybrid search weighs words against meaning."""

    def search_nodes(
        self,
        query: str | Sequence[str],
        *,
        entity_type: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        mode: str = "hybrid",
    ) -> Graph:
        """Entities matching the query, best first, and the relations touching them.

        Args:
            query: a query, or a list of queries of which an entity may match any.
            entity_type: only entities of exactly this type.
            limit: at most this many entities (the best); without it, every entity that
                contains a query and the best few that match only some of its words.
            offset: how many entities of that order to skip first.
            mode: "hybrid" (words and meaning, fused), "lexical" (words only) or
                "semantic" (meaning only). Hybrid is lexical while search by meaning is
                off or nothing is embedded yet.

        Raises:
            InvalidInputError: an argument is out of range, or "semantic" was asked of a
                memory without search by meaning (nothing is searched).
        """
        return self.search_page(query, entity_type=entity_type, limit=limit, offset=offset, mode=mode).graph

    def search_page(
        self,
        query: str | Sequence[str],
        *,
        entity_type: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        load_at_most: int | None = None,
        mode: str = "hybrid",
    ) -> GraphPage:
        """`search_nodes`, loading at most the first `load_at_most` of the entities it ranks.

        The page's `total_entities` is how many names the search ranked (after `offset`
        and `limit`), so a caller that cannot show them all knows how many it left out
        without loading them.
        """
        with self.reading():  # one snapshot for the ranking and the entities
            ranked = self.rank_search(
                query, entity_type=entity_type, limit=limit, offset=offset, named_at_most=load_at_most, mode=mode
            )
            return GraphPage(self.load_ranked(ranked.names), offset, ranked.total)

    def rank_search(
        self,
        query: str | Sequence[str],
        *,
        entity_type: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        named_at_most: int | None = None,
        mode: str = "hybrid",
    ) -> RankedNames:
        """The names `search_nodes` answers with, best first, the first `named_at_most` of them,
        and how many there are in all.

        Raises:
            InvalidInputError: an argument is out of range (nothing is searched).
        """
        queries = [query] if isinstance(query, str) else list(query)
        if not queries:
            raise InvalidInputError("query", "is an empty list; give a query, or a list of at least one.")
        self._check_batch("query", queries, self.limits.max_search_queries)
        for index, text in enumerate(queries):
            field = "query" if isinstance(query, str) else f"query[{index}]"
            self._check_text(field, text, self.limits.max_query_length)
        if entity_type is not None:
            self._check_name("entityType", entity_type)
        if limit is not None and not 1 <= limit <= self.limits.max_page_size:
            raise InvalidInputError(
                "limit", f"is {limit}; give a number from 1 to {self.limits.max_page_size}, or leave it out."
            )
        if not 0 <= offset <= self.limits.max_offset:
            raise InvalidInputError("offset", f"is {offset}; give a number from 0 to {self.limits.max_offset}.")
        if mode not in SEARCH_MODES:
            raise InvalidInputError("mode", f"is {mode!r}; give one of {', '.join(map(repr, SEARCH_MODES))}.")
        # A query without a word ("?", "\\") means nothing to the model either: hybrid leaves it to the words.
        wordless = not any(search.query_terms(text) for text in queries)
        if mode == "semantic":
            query_vectors = self.meaning.query_vectors(queries, required=True)
            assert query_vectors is not None
            with self.reading():
                near = self._nearest(query_vectors, entity_type, (offset + limit) if limit else None)
                partly = self._vectors().any_waiting()
            if not meaning_counts(near, self.meaning.knows_a_word(queries), self.fusion):
                near = []  # close to nothing in particular: nothing is near
            close = [FusedHit(hit.name, False, hit.score) for hit in near if hit.score >= self.fusion.min_similarity]
            return replace(_page(close, limit, offset, named_at_most), partly_embedded=partly)
        if mode == "hybrid" and not wordless and self.meaning.enabled:
            return self._hybrid(queries, entity_type, limit, offset, named_at_most)
        return self._lexical(queries, entity_type, limit, offset, named_at_most)

    def _lexical(
        self, queries: Sequence[str], entity_type: str | None, limit: int | None, offset: int, named_at_most: int | None
    ) -> RankedNames:
        plan = search.word_search(queries, entity_type=entity_type, limit=limit, offset=offset)
        with self.reading():
            # The store ranks and cuts, so only the entities answered are named.
            result = self.store.search_entities(replace(plan, named_at_most=named_at_most))
        return RankedNames(tuple(hit.name for hit in result.hits), result.total, result.more)

    def _nearest(self, query_vectors: Sequence[Any], entity_type: str | None, wanted: int | None) -> list[NearEntity]:
        """The entities closest in meaning to any of the queries, best first."""
        vectors = self._vectors()
        count = max(NEAR_CANDIDATES, wanted or 0)
        best: dict[str, float] = {}
        for vector in query_vectors:
            for near in vectors.nearest_entities(vector, self.meaning.fingerprint, count, entity_type):
                best[near.name] = max(near.score, best.get(near.name, -2.0))
        return [NearEntity(name, score) for name, score in sorted(best.items(), key=lambda item: -item[1])]

    def _vectors(self) -> VectorStore:
        """The memory's vectors: there whenever a query has a vector (meaning is on for it)."""
        vectors = self.meaning.vectors
        if vectors is None:
            raise self.meaning.unavailable()
        return vectors

    def _hybrid(
        self,
        queries: Sequence[str],
        entity_type: str | None,
        limit: int | None,
        offset: int,
        named_at_most: int | None,
    ) -> RankedNames:
        # The word ranking's candidates: with a limit, its best CANDIDATES (or the whole
        # page asked for); without one, every official match and its best word matches, as
        # a lexical search answers, so no official match is ever left out.
        window = None if limit is None else max(CANDIDATES, offset + limit)
        plan = search.word_search(queries, entity_type=entity_type, limit=window, offset=0)
        # The query is embedded beside the word search, outside any snapshot: the model's
        # time holds no lock.
        embedding = self.meaning.query_vectors_soon(queries)
        with self.reading():
            words = self.store.search_entities(plan)
        if limit is not None and sum(hit.official for hit in words.hits) >= offset + limit:
            # Whole-query matches fill the page (a name, a common word): meaning could only
            # reorder them among themselves, not worth embedding the query for.
            page = _page([FusedHit(hit.name, True, hit.score) for hit in words.hits], limit, offset, named_at_most)
            return replace(page, more=words.more)
        query_vectors = embedding.result()
        if query_vectors is None:
            return self._lexical(queries, entity_type, limit, offset, named_at_most)
        with self.reading():
            near = self._nearest(query_vectors, entity_type, None if limit is None else offset + limit)
            counts = bool(near) and meaning_counts(near, self.meaning.knows_a_word(queries), self.fusion)
            # What still waits is ranked by its words alone (see fusion.py); usually nothing does.
            partly = counts and self._vectors().any_waiting()
            waiting = self._vectors().waiting_among([hit.name for hit in words.hits]) if partly else set()
        if not counts:
            # Meaning took no part: the answer is the words' (and, with no extra argument, the official one).
            return self._lexical(queries, entity_type, limit, offset, named_at_most)
        fused = fuse(words.hits, near, self.fusion, waiting)
        if limit is None:
            official = [hit for hit in fused if hit.official]
            fused = official + [hit for hit in fused if not hit.official][: search.MAX_WORD_MATCHES]
        ranked = _page(fused, limit, offset, named_at_most)
        return replace(ranked, more=words.more, partly_embedded=partly)

    def official_subgraph(self, names: Sequence[str], at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        """`load_ranked(names).to_wire()` cut from `official_graph(at_most)`, or None when the
        memory holds more than `at_most` entities.

        On a small memory the whole graph's wire form is kept by the store until a write:
        picking the named entities and their relations from it, through an index by name
        kept as long as the memory is unchanged, costs a fraction of loading them and
        building entity and relation objects.
        """
        whole = self._whole_graph(at_most)
        if whole is None:
            return None
        positions = sorted({p for name in set(names) for p in whole.relations_by_name.get(name, ())})
        return {
            "entities": [entity for name in names for entity in whole.entities_by_name.get(name, ())],
            "relations": [whole.relations[p] for p in positions],
        }

    def _whole_graph(self, at_most: int) -> _IndexedGraph | None:
        version = self.version()
        kept = self._indexed
        if kept is None or version is None or kept.version != version:
            wire = self.official_graph(at_most)
            if wire is None:
                return None
            kept = _IndexedGraph.of(version, wire)
            # Read inside a write (no version), it may still roll back: not kept.
            self._indexed = None if version is None else kept
        return kept if kept.entity_count <= at_most else None

    def load_ranked(self, names: Sequence[str]) -> Graph:
        """The named entities in the order given, and every relation touching them (for an
        answer: without the relations' extra keys)."""
        with self.reading():
            entities = self.store.get_entities(names)
            # A JSONL file may hold two entities under one name; the official search returns both.
            by_name: dict[str, list[Entity]] = {}
            for entity in entities:
                by_name.setdefault(entity.name, []).append(entity)
            # Each name once: its entities (two projects', or a JSONL file's two) come together.
            ranked = tuple(entity for name in dict.fromkeys(names) for entity in by_name.get(name, ()))
            relations = self.relations_to_show(names)
        return self.graph_of(ranked, relations)


def _page(hits: Sequence[FusedHit], limit: int | None, offset: int, named_at_most: int | None) -> RankedNames:
    """The names of one page of a ranked answer (`offset`, `limit`), the first `named_at_most` of them."""
    page = hits[offset:] if limit is None else hits[offset : offset + limit]
    names = [hit.name for hit in page]
    return RankedNames(tuple(names if named_at_most is None else names[:named_at_most]), len(names))
