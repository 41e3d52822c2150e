"""JsonlStore's writes: inserts, updates and deletes on the rows in memory, inside `write()`.

A write by name reaches the entity the transaction's scope sees, and one by key the relations
it sees; an entity keeps its project through every change (only `move_entities` moves it).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.core.models import Entity, Relation
from graphmem.core.projects import SHARED
from graphmem.storage.jsonl.tables import _HeadRow, _RelationRow, _Tables


class _Writes(_Tables):
    """The writes of `JsonlStore`; the transaction saves the file once they are done."""

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        self._check_writing()
        for entity in entities:
            self._add_head(_HeadRow(entity))

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        self._check_writing()
        for relation in relations:
            self._add_relation(_RelationRow(relation))

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        self._check_writing()
        found = self._first_entity(name)
        if found is None or not contents:
            return
        position, entity = found
        grown = Entity(
            entity.name, entity.entity_type, entity.observations + tuple(contents), entity.extra, entity.project
        )
        self._set_head(position, _HeadRow(grown))

    def append_observations_batch(self, additions: Sequence[tuple[str, Sequence[str]]]) -> None:
        # In memory until the write commits: one entity at a time costs nothing more here.
        for name, contents in additions:
            self.append_observations(name, contents)

    def update_extras(self, entities: Sequence[Entity]) -> None:
        for entity in entities:
            self.update_entity(entity.name, entity)

    def update_entity(self, name: str, changed: Entity) -> None:
        self._check_writing()
        found = self._first_entity(name)
        if found is None:
            return
        position, entity = found
        # The project is the stored entity's: callers build `changed` without one.
        self._set_head(
            position,
            _HeadRow(Entity(changed.name, changed.entity_type, entity.observations, changed.extra, entity.project)),
        )
        if changed.name != name:
            # A name it had before (renamed back) may still list it: the index keeps stale
            # positions, which a look-up checks, but never the same one twice.
            positions = self._by_name.setdefault(changed.name, [])
            if position not in positions:
                positions.append(position)

    def delete_entities(self, names: Sequence[str]) -> int:
        self._check_writing()
        deleted = 0
        for name in dict.fromkeys(names):
            projects: set[str] = set()
            for position in self._entity_positions(name):
                row = self._head[position]
                assert row is not None and isinstance(row.value, Entity)
                projects.add(row.value.project)
                self._set_head(position, None)
            # One entity per project: a name a file holds twice (all kept) was one entity.
            deleted += len(projects)
            for position in self._relations_going_with(name, projects):
                self._delete_relation(position)
        return deleted

    def _relations_going_with(self, name: str, projects: set[str]) -> list[int]:
        """The relations deleted with the entities called `name` of `projects` (none: no such entity)."""
        naming = self._by_endpoint.get(name, ())
        if not projects:
            # Relations go even when the entity never existed: the official server deletes
            # dangling relations by name too (here, those the scope sees).
            return self._visible_relations(naming)
        if SHARED in projects:
            # No project can hold a name the shared space holds: a relation of any project
            # that names it means the shared entity.
            return self._live_relations(naming)
        # A project's entity is named by its project's relations only.
        return [
            position
            for position in self._live_relations(naming)
            if (row := self._relations[position]) is not None and row.value.project in projects
        ]

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        self._check_writing()
        found = self._first_entity(name)
        if found is None:
            return 0
        position, entity = found
        present = set(contents).intersection(entity.observations)
        if present:
            kept = tuple(o for o in entity.observations if o not in present)
            self._set_head(
                position, _HeadRow(Entity(entity.name, entity.entity_type, kept, entity.extra, entity.project))
            )
        return len(present)

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        self._check_writing()
        deleted = 0
        for key in dict.fromkeys(keys):
            projects: set[str] = set()
            for position in self._visible_relations(self._by_key.get(key, ())):
                row = self._relations[position]
                assert row is not None
                projects.add(row.value.project)
                self._delete_relation(position)
            # One relation per project: duplicate lines of a key (all kept) were one relation.
            deleted += len(projects)
        return deleted
