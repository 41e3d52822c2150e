"""JsonlStore's reads and searches: entities and relations, pages, counts, analytics rows, text and word search.

Every read answers within the transaction's scope (graphmem.core.projects): the rows of the
projects it sees, found through the indexes by name and key or by one pass over the rows. The
word ranking alone reads every project's entities, for its statistics (below).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from graphmem.core.models import Entity, Relation
from graphmem.storage.base import AnalyticsRows, EntitySummary, FieldHits, StoreCounts
from graphmem.storage.entity_query import EntityQuery, answer_in_python
from graphmem.storage.jsonl.tables import _HeadRow, _Tables
from graphmem.storage.words import (
    SearchHit,
    SearchResult,
    WordDocument,
    WordSearch,
    bm25_of,
    only_everywhere,
    term_frequencies,
)


def _fold(entity: Entity) -> str:
    # Joined with NUL: a match across two fields is only a false candidate, which the
    # exact per-field test then rejects; the blob narrows, it never decides.
    return "\0".join([entity.name.lower(), entity.entity_type.lower(), *(o.lower() for o in entity.observations)])


def _contains(entity: Entity, needle: str) -> bool:
    return (
        needle in entity.name.lower()
        or needle in entity.entity_type.lower()
        or any(needle in observation.lower() for observation in entity.observations)
    )


def _degrees(relations: Iterable[Relation]) -> Counter[str]:
    """How many relations touch each name (a relation to itself counts once)."""
    degree: Counter[str] = Counter()
    for relation in relations:
        degree[relation.from_] += 1
        if relation.to != relation.from_:
            degree[relation.to] += 1
    return degree


def _summary(entity: Entity, extra: dict[str, Any], degree: int) -> EntitySummary:
    def text(key: str) -> str | None:
        value = extra.get(key)
        return value if isinstance(value, str) else None

    version, importance = extra.get("version"), extra.get("importance")
    return EntitySummary(
        entity.name,
        entity.entity_type,
        text("createdAt"),
        text("updatedAt"),
        version if isinstance(version, int) and not isinstance(version, bool) else None,
        float(importance) if isinstance(importance, int | float) and not isinstance(importance, bool) else None,
        len(entity.observations),
        degree,
    )


def _ranked_counts(values: Iterable[str]) -> list[tuple[str, int]]:
    """Each value with how often it occurs, most common first, ties in value order."""
    return sorted(Counter(values).items(), key=lambda item: (-item[1], item[0]))


class _Reads(_Tables):
    """The reads of `JsonlStore`; every one runs inside `read()` or `write()`, on the rows in memory."""

    def existing_names(self, names: Sequence[str]) -> set[str]:
        return {name for name in names if self._first_entity(name) is not None}

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        resolved = {name: name for name in names if self._first_entity(name) is not None}
        others = [name for name in names if name not in resolved]
        if others:
            aliases = self._aliases()
            for name in others:
                # The oldest entity the scope sees that answers to the alias wins.
                for position in aliases.get(name, ()):
                    row = self._head[position]
                    assert row is not None and isinstance(row.value, Entity)  # the index is dropped on a change
                    if self._scope.sees(row.value.project):
                        resolved[name] = row.value.name
                        break
        return resolved

    def _aliases(self) -> dict[str, list[int]]:
        """The alias index, across every project (each look-up keeps what its scope sees)."""
        if self._alias_index is None:
            # Built when an alias is first looked up after a change: names that are
            # entities (the usual case) never pay for it.
            self._alias_index = {}
            for position, row in enumerate(self._head):
                if row is not None and isinstance(row.value, Entity):
                    for alias in dict.fromkeys(row.value.aliases):
                        self._alias_index.setdefault(alias, []).append(position)
        return self._alias_index

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        positions = sorted({p for name in set(names) for p in self._entity_positions(name)})
        return [row.value for p in positions if (row := self._head[p]) is not None and isinstance(row.value, Entity)]

    def iter_entities(self) -> Iterator[Entity]:
        if self._scope.every:
            for row in self._head:
                if row is not None and isinstance(row.value, Entity):
                    yield row.value
            return
        seen = self._scope.visible
        for row in self._head:
            if row is not None and isinstance(row.value, Entity) and row.value.project in seen:
                yield row.value

    def iter_relations(self) -> Iterator[Relation]:
        if self._scope.every:
            for relation_row in self._relations:
                if relation_row is not None:
                    yield relation_row.value
            return
        seen = self._scope.visible
        for relation_row in self._relations:
            if relation_row is not None and relation_row.value.project in seen:
                yield relation_row.value

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        # Stop at the first entity past the limit: a large memory is never written out here.
        entities = [entity.to_wire() for entity in itertools.islice(self.iter_entities(), at_most + 1)]
        if len(entities) > at_most:
            return None
        return {"entities": entities, "relations": [relation.to_wire() for relation in self.iter_relations()]}

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        matching = [e for e in self.iter_entities() if entity_type is None or e.entity_type == entity_type]
        page = matching[offset:] if limit is None else matching[offset : offset + limit]
        return page, len(matching)

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        # No index: the file is in memory, and a look-up reads it once.
        return answer_in_python(self.iter_entities(), self.iter_relations(), query)

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        positions = {p for name in set(names) for p in self._by_endpoint.get(name, ())}
        visible = self._visible_relations(sorted(positions))
        return [row.value for p in visible if (row := self._relations[p]) is not None]

    def relations_among(self, names: Sequence[str], limit: int) -> list[Relation]:
        wanted = set(names)
        among = (
            relation
            for relation in self.relations_touching(names)
            if relation.from_ in wanted and relation.to in wanted
        )
        return list(itertools.islice(among, limit))

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        return [relation.key for relation in self.relations_touching(names)]

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        return {key for key in keys if self._visible_relations(self._by_key.get(key, ()))}

    def observations_of(self, name: str) -> list[str] | None:
        found = self._first_entity(name)
        return None if found is None else list(found[1].observations)

    def find_text(self, needle: str) -> dict[str, FieldHits]:
        hits: dict[str, FieldHits] = {}
        every, seen = self._scope.every, self._scope.visible
        for position, row in enumerate(self._head):
            if row is None or not isinstance(row.value, Entity) or not (every or row.value.project in seen):
                continue
            if row.folded is None:
                row.folded = _fold(row.value)
            if needle not in row.folded:
                continue
            entity = row.value
            in_name = needle in entity.name.lower()
            in_type = needle in entity.entity_type.lower()
            count = sum(needle in observation.lower() for observation in entity.observations)
            if not (in_name or in_type or count):
                continue
            order = position
            previous = hits.get(entity.name)
            if previous is not None:
                # Entities sharing a name (kept from a file, or in two projects seen at once)
                # answer as one, at the first's place.
                in_type = in_type or previous.in_type
                count += previous.observation_hits
                order = previous.order
            hits[entity.name] = FieldHits(in_name, in_type, count, order)
        return hits

    # -- ranked search (issue 3, part 1) ---------------------------------------------------

    def search_entities(self, search: WordSearch) -> SearchResult:
        # The word index is every entity row the scope sees, whatever the type filter, as in
        # SQLite's FTS5 (a project has a word index of its own there): a search in a project
        # ranks as a memory of what it sees alone would, its scores and the words found
        # everywhere those of the project and the shared space.
        every, seen = self._scope.every, self._scope.visible
        rows: list[tuple[int, _HeadRow, Entity]] = []
        documents: list[WordDocument] = []
        for position, row in enumerate(self._head):
            if row is not None and isinstance(row.value, Entity):
                entity = row.value
                if not (every or entity.project in seen):
                    continue
                if row.words is None:
                    row.words = WordDocument(entity.name, list(entity.aliases), entity.entity_type, entity.observations)
                rows.append((position, row, entity))
                documents.append(row.words)
        frequencies = term_frequencies(documents, search.terms, search.weights)
        everywhere = only_everywhere(frequencies, len(documents))
        scores = bm25_of(documents, frequencies)
        best: dict[str, tuple[bool, float, int]] = {}
        for index, (position, row, entity) in enumerate(rows):
            if search.entity_type is not None and entity.entity_type != search.entity_type:
                continue
            if row.folded is None:
                row.folded = _fold(entity)
            official = any(needle in row.folded and _contains(entity, needle) for needle in search.needles)
            score = scores.get(index, 0.0)
            if not official and not score:
                continue
            previous = best.get(entity.name)
            if previous is not None:
                # Entities sharing a name (kept from a file, or in two projects seen at once)
                # rank as one, where the first match is.
                official, score, position = official or previous[0], max(score, previous[1]), previous[2]
            best[entity.name] = (official, score, position)
        ordered = sorted(best.items(), key=lambda item: (not item[1][0], -item[1][1], item[1][2]))
        hits = [SearchHit(name, official, score) for name, (official, score, _) in ordered]
        if everywhere and hits and hits[0].official:
            # As in SQLite: words found everywhere neither order the whole-query matches
            # (creation order does) nor add entities to them.
            official_hits = sorted((item for item in best.items() if item[1][0]), key=lambda item: item[1][2])
            hits = [SearchHit(name, True, 0.0) for name, _ in official_hits]
        if search.limit is not None:
            page = hits[search.offset : search.offset + search.limit]
        else:
            official_count = sum(hit.official for hit in hits)
            page = hits[: official_count + search.max_word_matches][search.offset :]
        return SearchResult(page[: search.named_at_most], len(page))

    # -- end of ranked search --------------------------------------------------------------

    def counts(self) -> StoreCounts:
        entities = observations = 0
        for entity in self.iter_entities():
            entities += 1
            observations += len(entity.observations)
        if self._scope.every:
            relations = len(self._relations) - self._dead_relations
        else:
            relations = sum(1 for _ in self.iter_relations())
        return StoreCounts(entities, relations, observations)

    # -- navigation (issue 3, parts 3 and 4) -----------------------------------------------

    def entity_type_counts(self) -> list[tuple[str, int]]:
        return _ranked_counts(entity.entity_type for entity in self.iter_entities())

    def relation_type_counts(self) -> list[tuple[str, int]]:
        return _ranked_counts(relation.relation_type for relation in self.iter_relations())

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        if from_ is not None:
            candidates: Iterable[Relation] = self.relations_touching([from_])
        elif to is not None:
            candidates = self.relations_touching([to])
        else:
            candidates = self.iter_relations()
        matching = [
            relation
            for relation in candidates
            if (from_ is None or relation.from_ == from_)
            and (to is None or relation.to == to)
            and (relation_type is None or relation.relation_type == relation_type)
        ]
        page = matching[offset:] if limit is None else matching[offset : offset + limit]
        return page, len(matching)

    def most_connected(self, entity_type: str | None, offset: int, limit: int) -> list[EntitySummary]:
        degree = _degrees(self.iter_relations())
        summaries = [
            _summary(entity, entity.extra or {}, degree[entity.name])
            for entity in self.iter_entities()
            if entity_type is None or entity.entity_type == entity_type
        ]
        summaries.sort(key=lambda s: (s.degree, s.name), reverse=True)
        return summaries[offset : offset + limit]

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        degree = _degrees(self.iter_relations())
        names = set()
        summaries: list[EntitySummary] = []
        for entity in self.iter_entities():
            names.add(entity.name)
            extra = entity.extra or {}
            if thread_id is not None and extra.get("threadId") != thread_id:
                continue
            summaries.append(_summary(entity, extra, degree[entity.name]))
        order = {summary.name: index for index, summary in enumerate(summaries)}
        recent = sorted(summaries, key=lambda s: (s.updated_at is not None, s.updated_at or "", order[s.name]))
        recent.reverse()
        important = sorted(summaries, key=lambda s: (s.importance is not None, s.importance or 0.0, order[s.name]))
        important.reverse()
        # Ties as SQLite walks its indexes backwards: the later name first.
        connected = sorted((s for s in summaries if s.degree), key=lambda s: (s.degree, s.name), reverse=True)
        unconnected = [s for s in summaries if not s.degree]
        dangling = sorted(name for name in degree if name not in names)
        return AnalyticsRows(
            recent[:limit],
            important[:limit],
            connected[:limit],
            unconnected[:limit],
            len(unconnected),
            dangling[:limit],
            len(dangling),
        )

    # -- end of navigation -----------------------------------------------------------------
