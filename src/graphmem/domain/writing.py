"""The graph's writes: create, add, delete and import, each one store transaction.

What the official server does (dedup of entities by name and relations by key, cascade
on delete, add_observations on a missing entity fails whole) and what graphmem adds
(duplicates within one batch stored once, first wins; what was skipped is reported).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from graphmem.core.errors import DanglingRelationError, EntityNotFoundError
from graphmem.core.models import (
    AddedObservations,
    DeleteOutcome,
    Entity,
    ObservationAddition,
    ObservationDeletion,
    Relation,
)
from graphmem.core.projects import Scope
from graphmem.core.timestamps import new_metadata, now_iso
from graphmem.domain import projects
from graphmem.domain.observations import (
    NewObservation,
    change_observations,
    is_archived,
    new_records,
    plan_observations,
    stored_difference,
    with_records,
    without_archived,
)
from graphmem.domain.reading import Reads, distinct

__all__ = ["CreatedEntities", "CreatedRelations", "Writes"]

T = TypeVar("T")
_Item = TypeVar("_Item", Entity, Relation)


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


class Writes(Reads):
    """The writes of `KnowledgeGraph`: each one store transaction, all or nothing."""

    def create_entities(self, entities: Sequence[Entity]) -> CreatedEntities:
        """Create the entities whose names are new; skip (and report) the others."""
        self._check_entities(entities)
        now = now_iso()
        # New entities go to the project the call works in (the shared space across every project).
        home = self.scope.home
        with self.writing():
            # Seen across every project, a name held by any project exists: a shared name must
            # stay one entity everywhere (graphmem.core.projects).
            existing = self.store.existing_names([entity.name for entity in entities])
            # In the shared space alone, a name a project holds exists too (as across every project).
            existing |= set(projects.taken_elsewhere(self.store, self.scope, [entity.name for entity in entities]))
            created: list[Entity] = []
            skipped: list[str] = []
            seen: set[str] = set()
            # A new entity's metadata and observation records depend only on how many
            # facts it has, when none is archived: built once per count and shared, not
            # once per entity (2 ms of a 100-entity batch's Python). Nobody changes an
            # entity's extra in place: every change builds a new one.
            shared: dict[int, dict[str, Any] | None] = {}
            for entity in entities:
                if entity.name in existing or entity.name in seen:
                    skipped.append(entity.name)
                    continue
                seen.add(entity.name)
                contents = distinct(entity.observations)
                # An archived fact starts with a bracketed prefix: most facts have no bracket at all.
                plain = not any(is_archived(content) for content in contents if "[" in content)
                if plain and len(contents) in shared:
                    created.append(
                        Entity(entity.name, entity.entity_type, tuple(contents), shared[len(contents)], home)
                    )
                    continue
                fresh = Entity(entity.name, entity.entity_type, (), new_metadata(now, self.author), home)
                new = [NewObservation(content) for content in contents]
                made = with_records(fresh, *new_records(new, now, self.author))
                if plain:
                    shared[len(contents)] = made.extra
                created.append(made)
            self.store.insert_entities(created)
        return CreatedEntities(tuple(created), tuple(distinct(skipped)))

    def create_relations(self, relations: Sequence[Relation]) -> CreatedRelations:
        """Create the relations that are new; note endpoints that are not entities.

        Raises:
            DanglingRelationError: in strict mode, when an endpoint is missing (nothing saved).
        """
        self._check_relations("relations", relations)
        with self.writing():
            # An endpoint given by alias is stored under its entity's name.
            resolved = self.resolve_names(
                distinct(name for relation in relations for name in (relation.from_, relation.to))
            )
            now = now_iso()
            unique = list(
                _first_per_key(
                    Relation(
                        resolved.get(r.from_, r.from_),
                        resolved.get(r.to, r.to),
                        r.relation_type,
                        new_metadata(now, self.author),
                    )
                    for r in relations
                )
            )
            existing = self.store.existing_relations([relation.key for relation in unique])
            created = self.in_their_projects([relation for relation in unique if relation.key not in existing])
            endpoints = distinct(name for relation in created for name in (relation.from_, relation.to))
            missing = [name for name in endpoints if name not in resolved]
            if missing and self.strict:
                raise DanglingRelationError(missing)
            self.store.insert_relations(created)
        return CreatedRelations(tuple(created), tuple(missing))

    def in_their_projects(self, relations: list[Relation]) -> list[Relation]:
        """The new relations, each given the project it goes to (`projects.relation_home`)."""
        if not relations:
            return relations
        if not self.scope.every:
            return [replace(relation, project=self.scope.home) for relation in relations]
        if not self.store.holds_projects():
            return relations  # no projects: every relation is the shared space's, as made
        names = distinct(name for relation in relations for name in (relation.from_, relation.to))
        found = self.store.get_entities(names)
        projects.refuse_ambiguous_among(found, self.scope, "relations")
        by_name = {entity.name: entity for entity in found}
        return [
            replace(
                relation,
                project=projects.relation_home(
                    self.scope, [by_name[name] for name in (relation.from_, relation.to) if name in by_name]
                ),
            )
            for relation in relations
        ]

    def add_observations(self, additions: Sequence[ObservationAddition]) -> list[AddedObservations]:
        """Append observations each entity does not have yet.

        Raises:
            EntityNotFoundError: an entity of the batch does not exist (nothing saved).
        """
        self._check_batch("observations", additions)
        for index, addition in enumerate(additions):
            self._check_name(f"observations[{index}].entityName", addition.entity_name)
            self._check_observations(f"observations[{index}].contents", addition.contents)
            self._check_attribute(f"observations[{index}]", addition)
        validity = [
            self._check_validity(f"observations[{index}]", addition) for index, addition in enumerate(additions)
        ]
        results: list[AddedObservations] = []
        now = now_iso()
        with self.writing():
            # The batch may name one entity twice: later items see what earlier ones added.
            resolved = self.resolve_names(distinct(addition.entity_name for addition in additions))
            # Every change is planned first on entities read in one go, then written in a
            # few statements for the whole batch (issue 17, item 2): appending entity by
            # entity cost a statement, and a full-text index segment, per entity.
            before: dict[str, Entity] = {}
            found = self.store.get_entities(distinct(resolved.values()))
            projects.refuse_ambiguous_among(found, self.scope, "observations")
            for entity in found:
                before.setdefault(entity.name, entity)  # a JSONL file may repeat a name: the first counts
            after = dict(before)
            for index, addition in enumerate(additions):
                name = resolved.get(addition.entity_name)
                if name is None:
                    raise EntityNotFoundError(addition.entity_name)
                corrects = list(addition.supersedes) + [None] * (len(addition.contents) - len(addition.supersedes))
                valid_from, valid_until = validity[index]
                new = [
                    NewObservation(
                        content, old, attribute=addition.attribute, valid_from=valid_from, valid_until=valid_until
                    )
                    for content, old in zip(addition.contents, corrects, strict=False)
                ]
                plan = plan_observations(after[name], new, (), now, f"observations[{index}].supersedes", self.author)
                if plan.entity is not None:
                    after[name] = plan.entity
                results.append(AddedObservations(name, plan.added, plan.clashes))
            self._store_changes(before, after)
        return results

    def _store_changes(self, before: dict[str, Entity], after: dict[str, Entity]) -> None:
        """Write the entities of `after` that differ from `before`: their rows, then their records."""
        changed = [name for name, entity in after.items() if entity is not before[name]]
        appended: list[tuple[str, list[str]]] = []
        for name in changed:
            gone, new = stored_difference(before[name], after[name])
            if gone:
                self.store.remove_observations(name, gone)
            if new:
                appended.append((name, new))
        self.store.append_observations_batch(appended)
        self.store.update_extras([after[name] for name in changed])

    def delete_entities(self, names: Sequence[str]) -> DeleteOutcome:
        """Delete entities with every relation that touches them; unknown names are ignored."""
        self._check_names("entityNames", names)
        unique = distinct(names)
        with self.writing():
            projects.refuse_ambiguous(self.store, self.scope, "entityNames", unique)
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
        with self.writing():
            resolved = self.resolve_names(distinct(deletion.entity_name for deletion in deletions))
            projects.refuse_ambiguous(self.store, self.scope, "deletions", distinct(resolved.values()))
            now = now_iso()
            for index, deletion in enumerate(deletions):
                contents = distinct(deletion.observations)
                requested += len(contents)
                if deletion.entity_name not in resolved:
                    missing.append(deletion.entity_name)
                    continue
                name = resolved[deletion.entity_name]
                deleted += change_observations(
                    self.store, name, (), contents, now, f"deletions[{index}]", self.author
                ).removed
        return DeleteOutcome(requested, deleted, tuple(distinct(missing)))

    def delete_relations(self, relations: Sequence[Relation]) -> DeleteOutcome:
        """Delete relations that match exactly; the rest are ignored."""
        self._check_relations("relations", relations)
        keys = _unique_keys(relations)
        with self.writing():
            projects.refuse_ambiguous_relations(self.store, self.scope, "relations", keys)
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
        with self.writing():
            # An entity or relation from a file keeps the project it names: each project's merge
            # runs in that project's scope (a name is unique there), the rest in the call's.
            for chunk in _chunks(entities, 1000):
                for project, group in _by_project(chunk):
                    with self._scope_of_file(project):
                        new_entities += self._merge_entities(group)
            for relation_chunk in _chunks(relations, 1000):
                for project, relation_group in _by_project(relation_chunk):
                    with self._scope_of_file(project):
                        new_relations += self._merge_relations(relation_group)
        return new_entities, new_relations

    def _scope_of_file(self, project: str) -> AbstractContextManager[None]:
        """The call's own transaction, or, for items a file puts in a project, that project's scope
        (inside a transaction of every project; in a project's own, the file's project must be it)."""
        if not project or project == self.scope.project:
            return self.writing()
        return self.store.write(Scope(project))

    def _merge_entities(self, chunk: Sequence[Entity]) -> int:
        """Insert the new entities of `chunk`, give existing ones the observations they lack; how many were new."""
        by_name: dict[str, Entity] = {}
        extra: dict[str, list[str]] = {}
        for entity in chunk:
            if entity.name in by_name:
                extra.setdefault(entity.name, []).extend(entity.observations)
            else:
                by_name[entity.name] = entity
        existing = self.store.existing_names(list(by_name))
        # Across every project, a name two projects hold is one the file cannot say which of.
        projects.refuse_ambiguous(self.store, self.scope, "entities", sorted(existing))
        # Archived facts are kept but not shown, from the moment they arrive.
        fresh = [
            without_archived(
                Entity(
                    entity.name,
                    entity.entity_type,
                    tuple(distinct(entity.observations)),
                    entity.extra,
                    entity.project or self.scope.home,
                )
            )
            for name, entity in by_name.items()
            if name not in existing
        ]
        self.store.insert_entities(fresh)
        for name, entity in by_name.items():
            more = list(entity.observations) if name in existing else []
            more += extra.get(name, [])
            if more:
                have = set(self.store.observations_of(name) or [])
                self.store.append_observations(name, [c for c in distinct(more) if c not in have])
        return len(fresh)

    def _merge_relations(self, chunk: Sequence[Relation]) -> int:
        """Insert the relations of `chunk` that are new; how many were."""
        unique = list(_first_per_key(chunk))
        existing_keys = self.store.existing_relations([relation.key for relation in unique])
        fresh = [
            relation if relation.project else replace(relation, project=self.scope.home)
            for relation in unique
            if relation.key not in existing_keys
        ]
        self.store.insert_relations(fresh)
        return len(fresh)


def _first_per_key(relations: Iterable[Relation]) -> Iterator[Relation]:
    """The relations of a batch with a repeated key dropped (the first one wins)."""
    seen: set[tuple[str, str, str]] = set()
    for relation in relations:
        if relation.key not in seen:
            seen.add(relation.key)
            yield relation


def _by_project(items: Iterable[_Item]) -> list[tuple[str, list[_Item]]]:
    """`items` grouped by the project each names ("" for none), in the order projects first come."""
    groups: dict[str, list[_Item]] = {}
    for item in items:
        groups.setdefault(item.project, []).append(item)
    return list(groups.items())


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
