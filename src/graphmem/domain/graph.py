"""KnowledgeGraph: the domain rules of the memory, over any `Store`.

It holds what the official server does (exact, case-sensitive names; dedup of
entities by name and relations by key; cascade on delete; add_observations on a
missing entity fails whole) and the fixes graphmem adds (duplicates within one
batch stored once, first wins; what was skipped or missing is reported; limits).
Every public method is one store transaction, so a call is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from graphmem.core import validation
from graphmem.core.errors import DanglingRelationError, EntityNotFoundError, InvalidInputError
from graphmem.core.limits import Limits
from graphmem.core.models import (
    AddedObservations,
    DeleteOutcome,
    Entity,
    EntityOutline,
    Graph,
    GraphPage,
    ObservationAddition,
    ObservationDeletion,
    OutlinePage,
    Relation,
)
from graphmem.core.timestamps import new_metadata, now_iso
from graphmem.domain import search
from graphmem.domain.observations import (
    NewObservation,
    change_observations,
    new_records,
    with_records,
    without_archived,
)
from graphmem.storage.base import Store, StoreCounts

__all__ = ["CreatedEntities", "CreatedRelations", "KnowledgeGraph", "RankedNames"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RankedNames:
    """A search's answer by name, best first (perhaps only its start), and its whole length."""

    names: tuple[str, ...]
    total: int
    more: bool = False
    """More entities match than `total` counts (see `SearchResult.more`)."""


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


@dataclass(frozen=True, slots=True)
class CreatedEntities:
    created: tuple[Entity, ...]
    skipped: tuple[str, ...]
    """Names not created because they exist already or repeat an earlier item of the batch."""


@dataclass(frozen=True, slots=True)
class CreatedRelations:
    created: tuple[Relation, ...]
    missing_entities: tuple[str, ...]
    """Endpoint names of the new relations that are not entities in memory."""


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


class KnowledgeGraph:
    """The memory as the tools see it.

    Args:
        store: where the graph lives.
        strict: reject relations whose endpoints do not exist, instead of accepting them
            with a notice as the official server does.
        limits: the per-call limits to enforce.
    """

    def __init__(self, store: Store, *, strict: bool = False, limits: Limits | None = None) -> None:
        self.store = store
        self.strict = strict
        self.limits = limits or Limits()
        self._indexed: _IndexedGraph | None = None
        """A small memory's whole graph indexed by name, and the memory version it was read at."""

    # -- validation -----------------------------------------------------------

    def _check_text(self, field: str, value: str, max_length: int) -> None:
        if len(value) > max_length:
            raise InvalidInputError(
                field, f"is {len(value)} characters long, over the limit of {max_length}; shorten it."
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (from a JSON escape like "\ud800") cannot be stored as UTF-8.
            raise InvalidInputError(
                field, "contains an unpaired surrogate code point, which is not valid text; remove it."
            ) from None

    def _check_batch(self, field: str, items: Sequence[object], limit: int | None = None) -> None:
        limit = limit or self.limits.max_batch_items
        if len(items) > limit:
            raise InvalidInputError(
                field,
                f"has {len(items)} items, over the limit of {limit} per call; split it into several calls.",
            )

    def _check_name(self, field: str, value: str) -> None:
        self._check_text(field, value, self.limits.max_name_length)

    def _check_observations(self, field: str, contents: Sequence[str]) -> None:
        self._check_batch(field, contents, self.limits.max_observations_per_item)
        for index, content in enumerate(contents):
            self._check_text(f"{field}[{index}]", content, self.limits.max_observation_length)
            if self.strict:
                # Strict mode holds the official tools to save_memory's rule: one atomic fact.
                found = validation.observation_problem(content)
                if found is not None:
                    raise InvalidInputError(f"{field}[{index}]", f"{found[0]} {found[1]}")

    def _check_entities(self, entities: Sequence[Entity]) -> None:
        self._check_batch("entities", entities)
        for index, entity in enumerate(entities):
            self._check_name(f"entities[{index}].name", entity.name)
            self._check_name(f"entities[{index}].entityType", entity.entity_type)
            self._check_observations(f"entities[{index}].observations", entity.observations)
            if self.strict:
                self._check_quality(f"entities[{index}].name", entity.name, validation.MAX_NAME_LENGTH)
                self._check_quality(
                    f"entities[{index}].entityType", entity.entity_type, validation.MAX_ENTITY_TYPE_LENGTH
                )

    def _check_quality(self, field: str, value: str, max_length: int) -> None:
        """In strict mode, the shorter limits of spec 001 for names and types."""
        if len(value) > max_length:
            raise InvalidInputError(
                field, f"is {len(value)} characters long; in strict mode the limit is {max_length}. Shorten it."
            )

    def _check_relations(self, field: str, relations: Sequence[Relation]) -> None:
        self._check_batch(field, relations)
        for index, relation in enumerate(relations):
            self._check_name(f"{field}[{index}].from", relation.from_)
            self._check_name(f"{field}[{index}].to", relation.to)
            self._check_name(f"{field}[{index}].relationType", relation.relation_type)
            if self.strict:
                self._check_quality(
                    f"{field}[{index}].relationType", relation.relation_type, validation.MAX_RELATION_TYPE_LENGTH
                )

    def check_names(self, field: str, names: Sequence[str]) -> None:
        """Refuse a list of names over the batch limit, or with a name too long or not valid text.

        Raises:
            InvalidInputError: naming the field (and the item) and the problem.
        """
        self._check_names(field, names)

    def check_entities(self, entities: Sequence[Entity]) -> None:
        """Refuse a batch of entities over the limits (count, name, type, observations).

        Raises:
            InvalidInputError: naming the field (and the item) and the problem.
        """
        self._check_entities(entities)

    def check_relations(self, field: str, relations: Sequence[Relation]) -> None:
        """Refuse a batch of relations over the limits (count, endpoint and type lengths).

        Raises:
            InvalidInputError: naming the field (and the item) and the problem.
        """
        self._check_relations(field, relations)

    def check_page(self, entity_type: str | None, offset: int, limit: int | None) -> None:
        """Refuse a page with a negative offset, a limit under 1 or a type that is too long.

        Raises:
            InvalidInputError: naming the argument and what to give instead.
        """
        self._check_page(entity_type, offset, limit)

    def _check_names(self, field: str, names: Sequence[str]) -> None:
        self._check_batch(field, names)
        for index, name in enumerate(names):
            self._check_name(f"{field}[{index}]", name)

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        """Each of `names` that is an entity's name or alias, mapped to the entity's name.

        An entity's own name wins over another's alias. Call it inside a store
        transaction to resolve and use the names in one snapshot.
        """
        return self.store.resolve_names(names)

    # -- writes ---------------------------------------------------------------

    def create_entities(self, entities: Sequence[Entity]) -> CreatedEntities:
        """Create the entities whose names are new; skip (and report) the others."""
        self._check_entities(entities)
        now = now_iso()
        with self.store.write():
            existing = self.store.existing_names([entity.name for entity in entities])
            created: list[Entity] = []
            skipped: list[str] = []
            seen: set[str] = set()
            for entity in entities:
                if entity.name in existing or entity.name in seen:
                    skipped.append(entity.name)
                    continue
                seen.add(entity.name)
                fresh = Entity(entity.name, entity.entity_type, (), new_metadata(now))
                texts = [NewObservation(content) for content in _unique(entity.observations)]
                created.append(with_records(fresh, *new_records(texts, now)))
            self.store.insert_entities(created)
        return CreatedEntities(tuple(created), tuple(_unique(skipped)))

    def create_relations(self, relations: Sequence[Relation]) -> CreatedRelations:
        """Create the relations that are new; note endpoints that are not entities.

        Raises:
            DanglingRelationError: in strict mode, when an endpoint is missing (nothing saved).
        """
        self._check_relations("relations", relations)
        with self.store.write():
            # An endpoint given by alias is stored under its entity's name.
            resolved = self.resolve_names(
                _unique(name for relation in relations for name in (relation.from_, relation.to))
            )
            now = now_iso()
            unique = list(
                _first_per_key(
                    Relation(
                        resolved.get(r.from_, r.from_), resolved.get(r.to, r.to), r.relation_type, new_metadata(now)
                    )
                    for r in relations
                )
            )
            existing = self.store.existing_relations([relation.key for relation in unique])
            created = [relation for relation in unique if relation.key not in existing]
            endpoints = _unique(name for relation in created for name in (relation.from_, relation.to))
            missing = [name for name in endpoints if name not in resolved]
            if missing and self.strict:
                raise DanglingRelationError(missing)
            self.store.insert_relations(created)
        return CreatedRelations(tuple(created), tuple(missing))

    def add_observations(self, additions: Sequence[ObservationAddition]) -> list[AddedObservations]:
        """Append observations each entity does not have yet.

        Raises:
            EntityNotFoundError: an entity of the batch does not exist (nothing saved).
        """
        self._check_batch("observations", additions)
        for index, addition in enumerate(additions):
            self._check_name(f"observations[{index}].entityName", addition.entity_name)
            self._check_observations(f"observations[{index}].contents", addition.contents)
        results: list[AddedObservations] = []
        now = now_iso()
        with self.store.write():
            # The batch may name one entity twice: later items see what earlier ones added.
            resolved = self.resolve_names(_unique(addition.entity_name for addition in additions))
            for index, addition in enumerate(additions):
                name = resolved.get(addition.entity_name)
                if name is None:
                    raise EntityNotFoundError(addition.entity_name)
                corrects = list(addition.supersedes) + [None] * (len(addition.contents) - len(addition.supersedes))
                new = [NewObservation(content, old) for content, old in zip(addition.contents, corrects, strict=False)]
                change = change_observations(self.store, name, new, (), now, f"observations[{index}].supersedes")
                results.append(AddedObservations(name, change.added))
        return results

    def delete_entities(self, names: Sequence[str]) -> DeleteOutcome:
        """Delete entities with every relation that touches them; unknown names are ignored."""
        self._check_names("entityNames", names)
        unique = _unique(names)
        with self.store.write():
            present = self.store.existing_names(unique)
            # Relations touching a name are deleted even when the entity never existed,
            # as the official server does for dangling relations.
            deleted = self.store.delete_entities(unique)
        missing = tuple(name for name in unique if name not in present)
        return DeleteOutcome(len(unique), deleted, missing)

    def delete_observations(self, deletions: Sequence[ObservationDeletion]) -> DeleteOutcome:
        """Remove the listed observations; unknown entities and texts are ignored."""
        self._check_batch("deletions", deletions)
        for index, deletion in enumerate(deletions):
            self._check_name(f"deletions[{index}].entityName", deletion.entity_name)
            self._check_observations(f"deletions[{index}].observations", deletion.observations)
        requested = deleted = 0
        missing: list[str] = []
        with self.store.write():
            resolved = self.resolve_names(_unique(deletion.entity_name for deletion in deletions))
            now = now_iso()
            for index, deletion in enumerate(deletions):
                contents = _unique(deletion.observations)
                requested += len(contents)
                if deletion.entity_name not in resolved:
                    missing.append(deletion.entity_name)
                    continue
                name = resolved[deletion.entity_name]
                deleted += change_observations(self.store, name, (), contents, now, f"deletions[{index}]").removed
        return DeleteOutcome(requested, deleted, tuple(_unique(missing)))

    def delete_relations(self, relations: Sequence[Relation]) -> DeleteOutcome:
        """Delete relations that match exactly; the rest are ignored."""
        self._check_relations("relations", relations)
        keys = _unique_keys(relations)
        with self.store.write():
            deleted = self.store.delete_relations(keys)
        return DeleteOutcome(len(keys), deleted)

    def import_graph(self, entities: Iterable[Entity], relations: Iterable[Relation]) -> tuple[int, int]:
        """Bulk-load entities and relations (merging into what exists) in one transaction.

        Entities whose name exists get the observations they lack; relations are
        added unless they exist. No per-call limits apply: this is not a tool.

        Returns:
            how many entities and relations were new.
        """
        new_entities = new_relations = 0
        with self.store.write():
            for chunk in _chunks(entities, 1000):
                by_name: dict[str, Entity] = {}
                extra: dict[str, list[str]] = {}
                for entity in chunk:
                    if entity.name in by_name:
                        extra.setdefault(entity.name, []).extend(entity.observations)
                    else:
                        by_name[entity.name] = entity
                existing = self.store.existing_names(list(by_name))
                # Archived facts are kept but not shown, from the moment they arrive.
                fresh = [
                    without_archived(
                        Entity(entity.name, entity.entity_type, tuple(_unique(entity.observations)), entity.extra)
                    )
                    for name, entity in by_name.items()
                    if name not in existing
                ]
                self.store.insert_entities(fresh)
                new_entities += len(fresh)
                for name, entity in by_name.items():
                    more = list(entity.observations) if name in existing else []
                    more += extra.get(name, [])
                    if more:
                        have = set(self.store.observations_of(name) or [])
                        self.store.append_observations(name, [c for c in _unique(more) if c not in have])
            for relation_chunk in _chunks(relations, 1000):
                unique = list(_first_per_key(relation_chunk))
                existing_keys = self.store.existing_relations([relation.key for relation in unique])
                fresh_relations = [relation for relation in unique if relation.key not in existing_keys]
                self.store.insert_relations(fresh_relations)
                new_relations += len(fresh_relations)
        return new_entities, new_relations

    # -- reads ----------------------------------------------------------------

    def read_graph(self) -> Graph:
        """The whole graph, in creation order."""
        with self.store.read():
            return Graph(tuple(self.store.iter_entities()), tuple(self.store.iter_relations()))

    def read_page(self, entity_type: str | None, offset: int, limit: int | None) -> GraphPage:
        """A slice of the graph: entities in creation order, optionally of one type.

        Relations are those with both ends in the slice, so the slice is consistent on
        its own (as spec 004 pages read_graph); relations across pages are reached with
        open_nodes or the traversal tools. Without filter or paging, this is read_graph.
        """
        self._check_page(entity_type, offset, limit)
        with self.store.read():
            if entity_type is None and offset == 0 and limit is None:
                whole = Graph(tuple(self.store.iter_entities()), tuple(self.store.iter_relations()))
                return GraphPage(whole, 0, len(whole.entities))
            entities, total = self.store.page_entities(entity_type, offset, limit)
            names = {entity.name for entity in entities}
            relations = [
                relation
                for relation in self.store.relations_touching(list(names))
                if relation.from_ in names and relation.to in names
            ]
        return GraphPage(Graph(tuple(entities), tuple(relations)), offset, total)

    def time_limit(self, seconds: float) -> AbstractContextManager[None]:
        """Work in the block is stopped and rolled back (`TimeLimitError`) once `seconds` pass; 0: no limit."""
        return self.store.time_limit(seconds)

    def version(self) -> Hashable | None:
        """A token equal only while the memory is unchanged; None when the store cannot tell."""
        return self.store.version()

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        """The whole graph in the official wire form, or None when it holds more than `at_most` entities."""
        with self.store.read():
            return self.store.official_graph(at_most)

    def read_head(self, limit: int) -> GraphPage:
        """The first `limit` entities and every relation touching them (for an answer: without
        the relations' extra keys).

        When the graph has no more entities than that, this is exactly read_graph
        (relations between entities that do not exist included).
        """
        with self.store.read():
            entities, total = self.store.page_entities(None, 0, limit)
            if total <= limit:
                return GraphPage(Graph(tuple(entities), tuple(self.store.iter_relations())), 0, total)
            # Keys, not whole relations: an answer never shows a relation's extra keys.
            keys = self.store.relation_keys_touching([entity.name for entity in entities])
        return GraphPage(Graph(tuple(entities), tuple(Relation(*key) for key in keys)), 0, total)

    def outline_page(
        self, entity_type: str | None, offset: int, limit: int | None, *, count_relations: bool = True
    ) -> OutlinePage:
        """Entities without their observations, with how many observations and relations each has.

        With `count_relations` False every relation count is 0 (a names-only listing skips the query).
        """
        self._check_page(entity_type, offset, limit)
        with self.store.read():
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

    def _check_page(self, entity_type: str | None, offset: int, limit: int | None) -> None:
        if entity_type is not None:
            self._check_text("entityType", entity_type, self.limits.max_name_length)
        if not 0 <= offset <= self.limits.max_offset:
            raise InvalidInputError("offset", f"is {offset}; give a number from 0 to {self.limits.max_offset}.")
        if limit is not None and limit < 1:
            raise InvalidInputError("limit", f"is {limit}; give 1 or more, or leave it out for everything.")

    def iter_graph(self) -> tuple[Iterator[Entity], Iterator[Relation]]:
        """Stream the whole graph without holding it in memory (for exports).

        Call it inside `store.read()` to get one consistent snapshot.
        """
        return self.store.iter_entities(), self.store.iter_relations()

    def open_nodes(self, names: Sequence[str]) -> Graph:
        """The named entities (exact names) and every relation touching one of them."""
        self._check_names("names", names)
        with self.store.read():
            resolved = self.resolve_names(_unique(names))
            entities = self.store.get_entities(_unique(resolved.get(name, name) for name in names))
            relations = self.store.relations_touching([entity.name for entity in entities])
        return Graph(tuple(entities), tuple(relations))

    def search_nodes(
        self,
        query: str | Sequence[str],
        *,
        entity_type: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Graph:
        """Entities matching the query, best first, and the relations touching them.

        Args:
            query: a query, or a list of queries of which an entity may match any.
            entity_type: only entities of exactly this type.
            limit: at most this many entities (the best); without it, every entity that
                contains a query and the best few that match only some of its words.
            offset: how many entities of that order to skip first.

        Raises:
            InvalidInputError: an argument is out of range (nothing is searched).
        """
        return self.search_page(query, entity_type=entity_type, limit=limit, offset=offset).graph

    def search_page(
        self,
        query: str | Sequence[str],
        *,
        entity_type: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        load_at_most: int | None = None,
    ) -> GraphPage:
        """`search_nodes`, loading at most the first `load_at_most` of the entities it ranks.

        The page's `total_entities` is how many names the search ranked (after `offset`
        and `limit`), so a caller that cannot show them all knows how many it left out
        without loading them.
        """
        with self.store.read():  # one snapshot for the ranking and the entities
            ranked = self.rank_search(
                query, entity_type=entity_type, limit=limit, offset=offset, named_at_most=load_at_most
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
        plan = search.word_search(queries, entity_type=entity_type, limit=limit, offset=offset)
        with self.store.read():
            # The store ranks and cuts, so only the entities answered are named.
            result = self.store.search_entities(replace(plan, named_at_most=named_at_most))
        return RankedNames(tuple(hit.name for hit in result.hits), result.total, result.more)

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
        with self.store.read():
            entities = self.store.get_entities(names)
            # A JSONL file may hold two entities under one name; the official search returns both.
            by_name: dict[str, list[Entity]] = {}
            for entity in entities:
                by_name.setdefault(entity.name, []).append(entity)
            ranked = tuple(entity for name in names for entity in by_name.get(name, ()))
            # Keys, not whole relations: an answer never shows a relation's extra keys.
            relations = tuple(Relation(*key) for key in self.store.relation_keys_touching(names))
        return Graph(ranked, relations)

    def counts(self) -> StoreCounts:
        with self.store.read():
            return self.store.counts()


def _first_per_key(relations: Iterable[Relation]) -> Iterator[Relation]:
    """The relations of a batch with a repeated key dropped (the first one wins)."""
    seen: set[tuple[str, str, str]] = set()
    for relation in relations:
        if relation.key not in seen:
            seen.add(relation.key)
            yield relation


def _unique_keys(relations: Sequence[Relation]) -> list[tuple[str, str, str]]:
    return list(dict.fromkeys(relation.key for relation in relations))


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
