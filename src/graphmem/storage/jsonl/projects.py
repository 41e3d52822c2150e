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

    _writes: int
    _writing: bool
    _holds_projects_at: tuple[tuple[int, int, int], bool] | None = None
    """Whether the memory held projects, and in which state (`holds_projects`)."""

    def move_entities(self, names: Sequence[str], source: str, target: str) -> int:
        self._check_writing()
        moved: set[str] = set()
        for name in dict.fromkeys(names):
            for position in self._by_name.get(name, ()):
                row = self._head[position]
                # `_by_name` entries are hints (see `_holds`): each is checked against its row.
                if row is None or not isinstance(row.value, Entity) or row.value.name != name:
                    continue
                entity = row.value
                if entity.project == source and source != target:
                    moved.add(name)
                    moving = Entity(entity.name, entity.entity_type, entity.observations, entity.extra, target)
                    self._set_head(position, _HeadRow(moving))
        return len(moved)

    def move_relations(self, keys: Sequence[tuple[str, str, str]], source: str, target: str) -> int:
        self._check_writing()
        moved: set[tuple[str, str, str]] = set()
        for key in dict.fromkeys(keys):
            for position in self._live_relations(self._by_key.get(key, ())):
                row = self._relations[position]
                assert row is not None
                relation = row.value
                if relation.project == source and source != target:
                    moved.add(key)
                    self._set_relation(position, _RelationRow(Relation(*key, relation.extra, target)))
        return len(moved)

    def holds_projects(self) -> bool:
        # Read on every read of the whole graph across every project: one pass over the rows
        # per state of the memory (the rows and the write count), not one per read.
        state = (self._writes, len(self._head), len(self._relations))
        if self._holds_projects_at is None or self._holds_projects_at[0] != state or self._writing:
            held = any(
                row is not None and isinstance(row.value, Entity) and row.value.project for row in self._head
            ) or any(row is not None and row.value.project for row in self._relations)
            self._holds_projects_at = None if self._writing else (state, held)
            return held
        return self._holds_projects_at[1]

    def projects_holding(self, names: Sequence[str]) -> dict[str, list[str]]:
        held: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            for position in sorted(self._by_name.get(name, ())):
                row = self._head[position]
                # `_by_name` entries are hints (see `_holds`): each is checked against its row.
                if row is not None and isinstance(row.value, Entity) and row.value.name == name:
                    held.setdefault(name, []).append(row.value.project)
        return held

    def project_keys(self) -> list[str]:
        keys = {row.value.project for row in self._head if row is not None and isinstance(row.value, Entity)}
        keys.update(row.value.project for row in self._relations if row is not None)
        return sorted(keys)

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
