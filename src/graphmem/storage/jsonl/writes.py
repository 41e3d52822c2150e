"""JsonlStore's writes: inserts, updates and deletes on the rows in memory, inside `write()`."""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.core.models import Entity, Relation
from graphmem.storage.jsonl.tables import _HeadRow, _RelationRow, _Tables


class _Writes(_Tables):
    """The writes of `JsonlStore`; the transaction saves the file once they are done."""

    def _check_writing(self) -> None:
        if not self._writing:
            raise RuntimeError("JsonlStore changes must happen inside write().")

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
        grown = Entity(entity.name, entity.entity_type, entity.observations + tuple(contents), entity.extra)
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
        self._set_head(
            position, _HeadRow(Entity(changed.name, changed.entity_type, entity.observations, changed.extra))
        )
        if changed.name != name:
            self._by_name.setdefault(changed.name, []).append(position)

    def delete_entities(self, names: Sequence[str]) -> int:
        self._check_writing()
        deleted = 0
        for name in dict.fromkeys(names):
            positions = self._entity_positions(name)
            for position in positions:
                self._set_head(position, None)
            deleted += bool(positions)
            # Relations go even when the entity never existed: the official server
            # deletes dangling relations by name too.
            for position in self._live_relations(self._by_endpoint.get(name, ())):
                self._delete_relation(position)
        return deleted

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        self._check_writing()
        found = self._first_entity(name)
        if found is None:
            return 0
        position, entity = found
        present = set(contents).intersection(entity.observations)
        if present:
            kept = tuple(o for o in entity.observations if o not in present)
            self._set_head(position, _HeadRow(Entity(entity.name, entity.entity_type, kept, entity.extra)))
        return len(present)

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        self._check_writing()
        deleted = 0
        for key in dict.fromkeys(keys):
            positions = self._live_relations(self._by_key.get(key, ()))
            for position in positions:
                self._delete_relation(position)
            deleted += bool(positions)
        return deleted
