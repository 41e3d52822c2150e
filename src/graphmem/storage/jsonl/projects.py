"""JsonlStore's projects: moving entities and relations between them, what each holds, deleting one.

A row's project is a field of its entity or relation (the `project` key on its line), so a
move replaces the row, as any change does, and the journal can undo it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.core.models import Entity, Relation
from graphmem.storage.base import ProjectCounts
from graphmem.storage.entity_query import instant
from graphmem.storage.jsonl.reads import _Reads
from graphmem.storage.jsonl.tables import _HeadRow, _RelationRow


@dataclass(slots=True)
class _Tally:
    """What one project holds, counted in one pass over the rows."""

    entities: int = 0
    relations: int = 0
    observations: int = 0
    last_written: str | None = None


class _Projects(_Reads):
    """The project methods of `JsonlStore`."""

    def move_entities(self, names: Sequence[str], project: str) -> int:
        self._check_writing()
        moved: set[tuple[str, str]] = set()
        for name in dict.fromkeys(names):
            for position in self._entity_positions(name):
                row = self._head[position]
                assert row is not None and isinstance(row.value, Entity)
                entity = row.value
                # One already there does not move (and leaves the file as it is).
                if entity.project != project:
                    moved.add((entity.project, name))
                    moving = Entity(entity.name, entity.entity_type, entity.observations, entity.extra, project)
                    self._set_head(position, _HeadRow(moving))
        return len(moved)

    def move_relations(self, keys: Sequence[tuple[str, str, str]], project: str) -> int:
        self._check_writing()
        moved: set[tuple[str, tuple[str, str, str]]] = set()
        for key in dict.fromkeys(keys):
            for position in self._visible_relations(self._by_key.get(key, ())):
                row = self._relations[position]
                assert row is not None
                relation = row.value
                if relation.project != project:
                    moved.add((relation.project, key))
                    self._set_relation(position, _RelationRow(Relation(*key, relation.extra, project)))
        return len(moved)

    def project_counts(self) -> list[ProjectCounts]:
        tallies: dict[str, _Tally] = {}
        for entity in self.iter_entities():
            tally = tallies.setdefault(entity.project, _Tally())
            tally.entities += 1
            tally.observations += len(entity.observations)
            # As instants (UTC, to the millisecond), as SQLite's `updated_utc` compares them:
            # an offset or a missing fraction does not make a time later than it is.
            written = instant((entity.extra or {}).get("updatedAt"))
            if written is not None and (tally.last_written is None or written > tally.last_written):
                tally.last_written = written
        for relation in self.iter_relations():
            tallies.setdefault(relation.project, _Tally()).relations += 1
        return [
            ProjectCounts(project, tally.entities, tally.relations, tally.observations, tally.last_written)
            for project, tally in sorted(tallies.items())
        ]

    def delete_project(self, project: str) -> tuple[int, int]:
        # The whole project, whatever the scope, as in SQLite: the domain decides who may.
        self._check_writing()
        entities = relations = 0
        for position, row in enumerate(self._head):
            if row is not None and isinstance(row.value, Entity) and row.value.project == project:
                self._set_head(position, None)
                entities += 1
        # Only the project's own relations: a shared relation naming one of its entities stays.
        for position, relation_row in enumerate(self._relations):
            if relation_row is not None and relation_row.value.project == project:
                self._delete_relation(position)
                relations += 1
        return entities, relations
