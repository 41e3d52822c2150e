"""Keeping a memory tidy: update, rename, upsert and merge entities, correct relations, compact.

Models make duplicates ("Bob", "Robert Smith") and typos; these operations fix them
without losing anything. Each is one store transaction, so it happens whole or not at
all. Changed entities and relations carry spec 002's `version` (raised on each change)
and `updatedAt` in their extra keys; a rename or merge keeps the old names as aliases,
so a model that still uses them finds the entity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from graphmem.core.contradictions import Clash
from graphmem.core.errors import EntityNotFoundError, InvalidInputError, ProjectConflictError, RelationNotFoundError
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import SHARED, Scope, project_name
from graphmem.core.timestamps import new_metadata, now_iso, touched
from graphmem.domain import projects
from graphmem.domain.change_log import note_forgotten
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import NewObservation, change_observations, new_records, with_records

__all__ = [
    "Compacted",
    "EntityUpdate",
    "Merged",
    "RelationUpdate",
    "Upserted",
    "compact",
    "merge_entities",
    "update_entities",
    "update_relations",
    "upsert_entities",
]


@dataclass(frozen=True, slots=True)
class EntityUpdate:
    """A change to one entity; a field left None stays as it is.

    Attributes:
        aliases: the entity's aliases from now on (replacing the old list).
        new_name: rename the entity; its relations follow and the old name becomes an alias.
    """

    name: str
    entity_type: str | None = None
    aliases: tuple[str, ...] | None = None
    new_name: str | None = None


@dataclass(frozen=True, slots=True)
class RelationUpdate:
    """A change to one relation, found by its key; a field left None stays as it is."""

    from_: str
    to: str
    relation_type: str
    new_from: str | None = None
    new_to: str | None = None
    new_relation_type: str | None = None


@dataclass(frozen=True, slots=True)
class Upserted:
    name: str
    created: bool
    added_observations: tuple[str, ...]
    clashes: tuple[Clash, ...] = ()
    """Current facts the added ones may contradict (core/contradictions.py)."""


@dataclass(frozen=True, slots=True)
class Merged:
    """What a merge did.

    Attributes:
        moved_observations: how many observations the source had.
        added_observations: how many of them the target did not have yet.
        redirected_relations: relations of the source now on the target.
        dropped_relations: relations not kept because they would have become a loop from
            the target to itself, or repeated one the target already had.
    """

    source: str
    target: str
    moved_observations: int
    added_observations: int
    redirected_relations: int
    dropped_relations: int
    target_entity: Entity


@dataclass(frozen=True, slots=True)
class Compacted:
    bytes_before: int
    bytes_after: int
    entities: int
    relations: int


def _alias_list(values: Sequence[str]) -> list[str] | None:
    unique = list(dict.fromkeys(values))
    return unique or None


# -- entities ------------------------------------------------------------------------------


def update_entities(graph: KnowledgeGraph, updates: Sequence[EntityUpdate]) -> list[Entity]:
    """Change types, aliases and names; all or nothing.

    Raises:
        EntityNotFoundError: an entity to update does not exist.
        InvalidInputError: a new name or an alias belongs to another entity, or an update
            changes nothing.
    """
    graph.check_names("entities", [update.name for update in updates])
    for index, update in enumerate(updates):
        field = f"entities[{index}]"
        if update.entity_type is None and update.aliases is None and update.new_name is None:
            raise InvalidInputError(field, "changes nothing; give entityType, aliases or newName.")
        for key, value in (("entityType", update.entity_type), ("newName", update.new_name)):
            if value is not None:
                graph.check_names(f"{field}.{key}", [value])
        if update.aliases is not None:
            graph.check_names(f"{field}.aliases", update.aliases)
    updated: list[Entity] = []
    with graph.writing():
        for index, update in enumerate(updates):
            field = f"entities[{index}]"
            name = graph.resolve_names([update.name]).get(update.name)
            if name is None:
                raise EntityNotFoundError(update.name)
            # A JSONL file may hold one name twice; like the official server, act on the first.
            # Across every project, a name two projects hold must be told apart first.
            found = graph.store.get_entities([name])
            projects.refuse_ambiguous_among(found, graph.scope, f"{field}.name")
            entity = found[0]
            new_name = update.new_name if update.new_name is not None else name
            aliases = list(update.aliases) if update.aliases is not None else list(entity.aliases)
            if new_name != name:
                _check_free(graph, f"{field}.newName", new_name, owner=name)
                if entity.project == SHARED:
                    # A shared entity is in every project: its new name must be free in all of them.
                    taken = graph.store.projects_holding([new_name]).get(new_name, [])
                    if any(project != SHARED for project in taken):
                        projects.refuse_taken_elsewhere(graph.store, Scope(SHARED), f"{field}.newName", [new_name])
                aliases.append(name)  # the old name keeps working
            aliases = [alias for alias in aliases if alias != new_name]
            for alias in aliases:
                _check_free(graph, f"{field}.aliases", alias, owner=name)
            extra = touched(entity.extra, now_iso(), by=graph.author, aliases=_alias_list(aliases))
            changed = Entity(
                new_name, update.entity_type or entity.entity_type, entity.observations, extra, entity.project
            )
            graph.store.update_entity(name, changed)
            if new_name != name:
                _redirect(graph, name, new_name, drop_new_self_loops=False)
            updated.append(changed)
    return updated


def _check_free(graph: KnowledgeGraph, field: str, name: str, *, owner: str) -> None:
    """Refuse `name` as a new name or alias of `owner` when it means another entity already."""
    holder = graph.resolve_names([name]).get(name)
    if holder is not None and holder != owner:
        raise InvalidInputError(
            field,
            f"{name!r} already names the entity {holder!r}; choose another, or merge the two with merge_entities.",
        )


def _redirect(graph: KnowledgeGraph, old: str, new: str, *, drop_new_self_loops: bool) -> tuple[int, int]:
    """Point every relation of `old` at `new`; returns how many moved and how many were dropped.

    A relation that would repeat one already there is dropped; so is one that would
    become a loop from `new` to itself, when `drop_new_self_loops` (a merge).
    """
    touching = graph.store.relations_touching([old])
    if not touching:
        return 0, 0
    graph.store.delete_relations([relation.key for relation in touching])
    moved: dict[tuple[str, str, str], Relation] = {}
    for relation in touching:
        from_ = new if relation.from_ == old else relation.from_
        to = new if relation.to == old else relation.to
        was_loop = relation.from_ == relation.to
        if drop_new_self_loops and from_ == to == new and not (was_loop and relation.from_ == new):
            continue
        moved.setdefault(
            (from_, to, relation.relation_type),
            Relation(from_, to, relation.relation_type, relation.extra, relation.project),
        )
    existing = graph.store.existing_relations(list(moved))
    kept = [relation for key, relation in moved.items() if key not in existing]
    graph.store.insert_relations(kept)
    return len(kept), len(touching) - len(kept)


def upsert_entities(graph: KnowledgeGraph, entities: Sequence[Entity]) -> list[Upserted]:
    """Create the entities that are new; give existing ones the observations they lack.

    An existing entity (found by name or alias) keeps its type, as spec 004 says, so
    re-asserting facts never overwrites what accumulated.
    """
    graph.check_entities(entities)
    results: list[Upserted] = []
    now = now_iso()
    with graph.writing():
        resolved = graph.resolve_names([entity.name for entity in entities])
        projects.refuse_ambiguous(graph.store, graph.scope, "entities", list(resolved.values()))
        for entity in entities:
            name = resolved.get(entity.name)
            contents = list(dict.fromkeys(entity.observations))
            if name is None:
                projects.refuse_taken_elsewhere(graph.store, graph.scope, f"entities[{entity.name}]", [entity.name])
                fresh = Entity(entity.name, entity.entity_type, (), new_metadata(now, graph.author), graph.scope.home)
                new = [NewObservation(content) for content in contents]
                graph.store.insert_entities([with_records(fresh, *new_records(new, now, graph.author))])
                resolved[entity.name] = entity.name
                results.append(Upserted(entity.name, True, tuple(contents)))
                continue
            new = [NewObservation(content) for content in contents]
            change = change_observations(graph.store, name, new, (), now, f"entities[{entity.name}]", graph.author)
            results.append(Upserted(name, False, change.added, change.clashes))
    return results


def merge_entities(graph: KnowledgeGraph, source: str, target: str) -> Merged:
    """Fold `source` into `target`: observations, relations and names; then delete `source`.

    The source's name and aliases become aliases of the target. All or nothing.

    Raises:
        EntityNotFoundError: either entity does not exist.
        InvalidInputError: both names are the same entity.
    """
    graph.check_names("source", [source])
    graph.check_names("target", [target])
    with graph.writing():
        resolved = graph.resolve_names([source, target])
        for given in (source, target):
            if given not in resolved:
                raise EntityNotFoundError(given)
        source_name, target_name = resolved[source], resolved[target]
        if source_name == target_name:
            raise InvalidInputError("source", f"{source!r} and {target!r} are the same entity; nothing to merge.")
        found = graph.store.get_entities([source_name, target_name])
        projects.refuse_ambiguous_among(found, graph.scope, "source")
        from_entity, into = (next(e for e in found if e.name == name) for name in (source_name, target_name))
        if from_entity.project == SHARED and not graph.scope.every:
            raise ProjectConflictError(
                "source",
                f"{source_name!r} is shared: every project's relations that name it must follow it, and this call "
                'sees one project. Nothing was changed: merge it with "project": "*".',
            )
        if SHARED not in (from_entity.project, into.project) and from_entity.project != into.project:
            raise ProjectConflictError(
                "source",
                f"{source_name!r} is in project {project_name(from_entity.project)!r} and {target_name!r} in "
                f"{project_name(into.project)!r}: its relations would name nothing. Nothing was changed: move one "
                "to the other's project first (move_entities).",
            )
        if from_entity.project == SHARED and into.project != SHARED:
            raise ProjectConflictError(
                "source",
                f"{source_name!r} is shared and {target_name!r} is in project {project_name(into.project)!r}: merged, "
                "it would vanish from every other project. Nothing was changed: move it into the project first "
                "(move_entities), or merge the other way.",
            )
        moving = [NewObservation(content) for content in dict.fromkeys(from_entity.observations)]
        added = change_observations(graph.store, target_name, moving, (), now_iso(), "source", graph.author).added
        into = graph.store.get_entities([target_name])[0]
        moved, dropped = _redirect(graph, source_name, target_name, drop_new_self_loops=True)
        # The source goes before the target takes its name as an alias, so no name means two entities.
        graph.store.delete_entities([source_name])
        aliases = [*into.aliases, source_name, *from_entity.aliases]
        kept_aliases = _alias_list([alias for alias in aliases if alias != target_name])
        extra = touched(into.extra, now_iso(), by=graph.author, aliases=kept_aliases)
        merged = Entity(target_name, into.entity_type, into.observations, extra, into.project)
        graph.store.update_entity(target_name, merged)
    return Merged(source_name, target_name, len(from_entity.observations), len(added), moved, dropped, merged)


# -- relations -------------------------------------------------------------------------------


def update_relations(graph: KnowledgeGraph, updates: Sequence[RelationUpdate]) -> list[Relation]:
    """Correct relations (their endpoints or type) or just mark them confirmed; all or nothing.

    Each relation's `version` goes up and `updatedAt` is set. Endpoints may be given by
    alias; new ones are stored under the entity's name.

    Raises:
        RelationNotFoundError: a relation to update does not exist.
        InvalidInputError: the corrected relation exists already.
    """
    graph.check_relations("relations", [Relation(u.from_, u.to, u.relation_type) for u in updates])
    for index, update in enumerate(updates):
        for argument, value in (
            ("newFrom", update.new_from),
            ("newTo", update.new_to),
            ("newRelationType", update.new_relation_type),
        ):
            if value is not None:
                graph.check_names(f"relations[{index}].{argument}", [value])
    changed: list[Relation] = []
    with graph.writing():
        for index, update in enumerate(updates):
            names = [update.from_, update.to, update.new_from or update.from_, update.new_to or update.to]
            resolved = graph.resolve_names(names)
            from_, to, new_from, new_to = (resolved.get(name, name) for name in names)
            key = (from_, to, update.relation_type)
            if not graph.store.existing_relations([key]):
                raise RelationNotFoundError(*key)
            projects.refuse_ambiguous_relations(graph.store, graph.scope, f"relations[{index}]", [key])
            old = next(relation for relation in graph.store.relations_touching([from_]) if relation.key == key)
            new_key = (new_from, new_to, update.new_relation_type or update.relation_type)
            if new_key != key and graph.store.existing_relations([new_key]):
                raise InvalidInputError(
                    f"relations[{index}]",
                    f"the corrected relation {new_key[0]} -{new_key[2]}-> {new_key[1]} exists already; "
                    "delete this one with delete_relations instead.",
                )
            graph.store.delete_relations([key])
            relation = Relation(*new_key, touched(old.extra, now_iso(), by=graph.author), old.project)
            graph.store.insert_relations([relation])
            changed.append(relation)
    return changed


# -- space -----------------------------------------------------------------------------------


def compact(graph: KnowledgeGraph) -> Compacted:
    """Give back the disk space deleted data still takes, and report the sizes."""
    before = graph.store.size_on_disk()
    if graph.history_days is not None:
        # The change log keeps the retention's days: older changes go before the space is given back.
        cutoff = (datetime.now(UTC) - timedelta(days=graph.history_days)).isoformat(timespec="milliseconds")
        cutoff = cutoff.replace("+00:00", "Z")
        with graph.through("compact"), graph.store.write():
            forgotten = graph.store.forget_changes(cutoff)
            if forgotten:
                note_forgotten(graph.store, cutoff, forgotten)
    graph.store.compact()
    with graph.reading():
        counts = graph.store.counts()
    return Compacted(before, graph.store.size_on_disk(), counts.entities, counts.relations)
