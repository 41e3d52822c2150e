"""The graph's reads: the whole graph, pages and outlines of it, and named entities."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from graphmem.core.models import (
    Entity,
    EntityOutline,
    Graph,
    GraphPage,
    OutlinePage,
    Relation,
)
from graphmem.domain.checks import Checks
from graphmem.storage.base import StoreCounts


def distinct(items: Iterable[str]) -> list[str]:
    """The items once each, in the order they first come."""
    return list(dict.fromkeys(items))


class Reads(Checks):
    """The reads of `KnowledgeGraph`: the whole graph, pages, outlines and named entities."""

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        """Each of `names` that is an entity's name or alias, mapped to the entity's name.

        An entity's own name wins over another's alias. Call it inside a store
        transaction to resolve and use the names in one snapshot.
        """
        return self.store.resolve_names(names)

    def read_graph(self) -> Graph:
        """The whole graph, in creation order."""
        with self.reading():
            return self.graph_of(tuple(self.store.iter_entities()), tuple(self.store.iter_relations()))

    def read_page(self, entity_type: str | None, offset: int, limit: int | None) -> GraphPage:
        """A slice of the graph: entities in creation order, optionally of one type.

        Relations are those with both ends in the slice, so the slice is consistent on
        its own (as spec 004 pages read_graph); relations across pages are reached with
        open_nodes or the traversal tools. Without filter or paging, this is read_graph.
        """
        self._check_page(entity_type, offset, limit)
        with self.reading():
            if entity_type is None and offset == 0 and limit is None:
                whole = self.graph_of(tuple(self.store.iter_entities()), tuple(self.store.iter_relations()))
                return GraphPage(whole, 0, len(whole.entities))
            entities, total = self.store.page_entities(entity_type, offset, limit)
            names = {entity.name for entity in entities}
            relations = [
                relation
                for relation in self.store.relations_touching(list(names))
                if relation.from_ in names and relation.to in names
            ]
        return GraphPage(self.graph_of(tuple(entities), tuple(relations)), offset, total)

    def time_limit(self, seconds: float) -> AbstractContextManager[None]:
        """Work in the block is stopped and rolled back (`TimeLimitError`) once `seconds` pass; 0: no limit."""
        return self.store.time_limit(seconds)

    def version(self) -> Hashable | None:
        """A token equal only while the memory is unchanged and the calls see the same projects;
        None when the store cannot tell. What an answer is kept under."""
        version = self.store.version()
        if version is None or self.scope.every:
            return version
        return (version, self.scope.project)

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        """The whole graph in the official wire form, or None when it holds more than `at_most`
        entities, or when, read across every project, the answer must say each one's project."""
        with self.reading():
            if self.scope.every and self.store.holds_projects():
                return None
            return self.store.official_graph(at_most)

    def read_head(self, limit: int) -> GraphPage:
        """The first `limit` entities and every relation touching them (for an answer: without
        the relations' extra keys).

        When the graph has no more entities than that, this is exactly read_graph
        (relations between entities that do not exist included).
        """
        with self.reading():
            entities, total = self.store.page_entities(None, 0, limit)
            if total <= limit:
                return GraphPage(self.graph_of(tuple(entities), tuple(self.store.iter_relations())), 0, total)
            relations = self.relations_to_show([entity.name for entity in entities])
        return GraphPage(self.graph_of(tuple(entities), relations), 0, total)

    def relations_to_show(self, names: Sequence[str]) -> tuple[Relation, ...]:
        """The relations touching `names` as an answer shows them: their keys, never their extra
        keys; with their projects when read across every project (the answer may say them)."""
        if self.scope.every and self.store.holds_projects():
            return tuple(
                Relation(r.from_, r.to, r.relation_type, project=r.project)
                for r in self.store.relations_touching(names)
            )
        # Keys, not whole relations: cheaper, and an answer never shows a relation's extra keys.
        return tuple(Relation(*key) for key in self.store.relation_keys_touching(names))

    def outline_page(
        self, entity_type: str | None, offset: int, limit: int | None, *, count_relations: bool = True
    ) -> OutlinePage:
        """Entities without their observations, with how many observations and relations each has.

        With `count_relations` False every relation count is 0 (a names-only listing skips the query).
        """
        self._check_page(entity_type, offset, limit)
        with self.reading():
            entities, total = self.store.page_entities(entity_type, offset, limit)
            degree: dict[str, int] = {}
            touching = self.store.relations_touching([e.name for e in entities]) if count_relations else []
            for relation in touching:
                degree[relation.from_] = degree.get(relation.from_, 0) + 1
                if relation.to != relation.from_:
                    degree[relation.to] = degree.get(relation.to, 0) + 1
        outlines = tuple(
            EntityOutline(entity.name, entity.entity_type, len(entity.observations), degree.get(entity.name, 0))
            for entity in entities
        )
        return OutlinePage(outlines, offset, total)

    def iter_graph(self) -> tuple[Iterator[Entity], Iterator[Relation]]:
        """Stream the whole graph without holding it in memory (for exports).

        Call it inside `store.read()` to get one consistent snapshot.
        """
        return self.store.iter_entities(), self.store.iter_relations()

    def open_nodes(self, names: Sequence[str]) -> Graph:
        """The named entities (exact names) and every relation touching one of them."""
        self._check_names("names", names)
        with self.reading():
            resolved = self.resolve_names(distinct(names))
            entities = self.store.get_entities(distinct(resolved.get(name, name) for name in names))
            relations = self.store.relations_touching([entity.name for entity in entities])
        return self.graph_of(tuple(entities), tuple(relations))

    def counts(self) -> StoreCounts:
        with self.reading():
            return self.store.counts()
