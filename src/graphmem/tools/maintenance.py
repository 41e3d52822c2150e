"""Maintenance tools: update, rename, upsert and merge entities, correct relations, compact."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import Field

from graphmem.core.models import Entity
from graphmem.domain import maintenance
from graphmem.domain.maintenance import EntityUpdate, RelationUpdate
from graphmem.tools import schemas
from graphmem.tools.base import (
    IDEMPOTENT_WRITE,
    WRITE,
    Omittable,
    ToolArgs,
    ToolContext,
    ToolOutput,
    ToolSpec,
    dump_json,
    entity_wire,
    plural,
)

__all__ = ["MAINTENANCE_TOOLS"]


def _answer(structured: dict[str, Any], summary: str) -> ToolOutput:
    # The summary first: it is what a model reads; the JSON follows for the details.
    return ToolOutput(structured, summary, (dump_json(structured),), changed=True)


def _versioned(entity: Entity) -> dict[str, Any]:
    wire = entity_wire(entity)
    wire.pop("observations")
    version = (entity.extra or {}).get("version")
    if isinstance(version, int):
        wire["version"] = version
    return wire


# -- update_entities --------------------------------------------------------------------------


class _EntityChange(ToolArgs):
    name: str
    entity_type: Omittable[str] = Field(default=None, alias="entityType")
    aliases: Omittable[list[str]] = None
    new_name: Omittable[str] = Field(default=None, alias="newName", min_length=1)


class _UpdateEntitiesArgs(ToolArgs):
    entities: list[_EntityChange] = Field(min_length=1)


def update_entities(ctx: ToolContext, args: _UpdateEntitiesArgs) -> ToolOutput:
    updates = [
        EntityUpdate(
            change.name,
            change.entity_type,
            None if change.aliases is None else tuple(change.aliases),
            change.new_name,
        )
        for change in args.entities
    ]
    updated = maintenance.update_entities(ctx.graph, updates)
    renamed = [
        f"{change.name} is now {change.new_name}"
        for change in args.entities
        if change.new_name is not None and change.new_name != change.name
    ]
    summary = f"Updated {len(updated)} {plural(len(updated), 'entity', 'entities')}"
    summary += f" ({'; '.join(renamed)}; old names kept as aliases)." if renamed else "."
    return _answer({"updated": [_versioned(entity) for entity in updated]}, summary)


# -- update_relations -------------------------------------------------------------------------


class _RelationChange(ToolArgs):
    from_: str = Field(alias="from")
    to: str
    relation_type: str = Field(alias="relationType")
    new_from: Omittable[str] = Field(default=None, alias="newFrom")
    new_to: Omittable[str] = Field(default=None, alias="newTo")
    new_relation_type: Omittable[str] = Field(default=None, alias="newRelationType")


class _UpdateRelationsArgs(ToolArgs):
    relations: list[_RelationChange] = Field(min_length=1)


def update_relations(ctx: ToolContext, args: _UpdateRelationsArgs) -> ToolOutput:
    updates = [
        RelationUpdate(c.from_, c.to, c.relation_type, c.new_from, c.new_to, c.new_relation_type)
        for c in args.relations
    ]
    changed = maintenance.update_relations(ctx.graph, updates)
    items = [{**relation.to_wire(), "version": (relation.extra or {}).get("version", 1)} for relation in changed]
    return _answer({"updated": items}, f"Updated {len(items)} {plural(len(items), 'relation', 'relations')}.")


# -- upsert_entities ---------------------------------------------------------------------------


class _UpsertEntity(ToolArgs):
    name: str
    entity_type: str = Field(alias="entityType")
    observations: list[str] = Field(default_factory=list)


class _UpsertArgs(ToolArgs):
    entities: list[_UpsertEntity] = Field(min_length=1)


def upsert_entities(ctx: ToolContext, args: _UpsertArgs) -> ToolOutput:
    entities = [Entity(item.name, item.entity_type, tuple(item.observations)) for item in args.entities]
    results = maintenance.upsert_entities(ctx.graph, entities)
    items = [
        {"name": result.name, "created": result.created, "addedObservations": list(result.added_observations)}
        for result in results
    ]
    created = sum(result.created for result in results)
    summary = (
        f"Created {created} {plural(created, 'entity', 'entities')}; "
        f"added observations to {len(results) - created} existing {plural(len(results) - created, 'one', 'ones')}."
    )
    return _answer({"results": items}, summary)


# -- merge_entities ----------------------------------------------------------------------------


class _MergeArgs(ToolArgs):
    source: str
    target: str


def merge_entities(ctx: ToolContext, args: _MergeArgs) -> ToolOutput:
    merged = maintenance.merge_entities(ctx.graph, args.source, args.target)
    structured = {
        "source": merged.source,
        "target": merged.target,
        "movedObservations": merged.moved_observations,
        "addedObservations": merged.added_observations,
        "redirectedRelations": merged.redirected_relations,
        "droppedRelations": merged.dropped_relations,
        "entity": entity_wire(merged.target_entity),
    }
    summary = (
        f"Merged {merged.source} into {merged.target}: {merged.added_observations} new "
        f"{plural(merged.added_observations, 'observation', 'observations')}, {merged.redirected_relations} "
        f"{plural(merged.redirected_relations, 'relation', 'relations')} redirected, {merged.dropped_relations} "
        f"dropped as loops or repeats; {merged.source} is now an alias of {merged.target}."
    )
    return _answer(structured, summary)


# -- compact -----------------------------------------------------------------------------------


class _NoArgs(ToolArgs):
    pass


def compact(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    done = maintenance.compact(ctx.graph)
    structured = {
        "bytesBefore": done.bytes_before,
        "bytesAfter": done.bytes_after,
        "entities": done.entities,
        "relations": done.relations,
    }
    summary = (
        f"Compacted the memory from {done.bytes_before:,} to {done.bytes_after:,} bytes "
        f"({done.entities:,} entities, {done.relations:,} relations)."
    )
    return ToolOutput(structured, summary, (dump_json(structured),))


# -- listings ------------------------------------------------------------------------------------

_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}
_NAME_IN = {"type": "string", "description": "The entity's exact name (case-sensitive) or one of its aliases"}

_ENTITY_HEAD = schemas.closed(
    {
        "type": "object",
        "properties": {
            "name": _STRING,
            "entityType": _STRING,
            "aliases": _STRINGS,
            "createdAt": _STRING,
            "updatedAt": _STRING,
            "version": {"type": "integer"},
        },
        "required": ["name", "entityType"],
    }
)

MAINTENANCE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="update_entities",
        title="Update Entities",
        description=(
            "Change existing entities: their type (entityType), their aliases (the full new list), or their name "
            "(newName; every relation follows, and the old name stays as an alias). Observations are not "
            "touched: use add_observations and delete_observations. All or nothing; each entity's version goes up."
        ),
        input_schema=schemas.input_schema(
            {
                "entities": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": _NAME_IN,
                            "entityType": {"type": "string", "description": "The new type"},
                            "aliases": {**_STRINGS, "description": "The entity's aliases from now on"},
                            "newName": {"type": "string", "minLength": 1, "description": "Rename the entity to this"},
                        },
                        "required": ["name"],
                    },
                }
            },
            ["entities"],
        ),
        output_schema=schemas.output_schema({"updated": {"type": "array", "items": _ENTITY_HEAD}}, ["updated"]),
        annotations=IDEMPOTENT_WRITE,
        arguments=_UpdateEntitiesArgs,
        run=update_entities,
    ),
    ToolSpec(
        name="update_relations",
        title="Update Relations",
        description=(
            "Correct existing relations, found by their exact from, to and relationType: give newFrom, newTo "
            "and/or newRelationType to change them, or nothing new to mark them confirmed. All or nothing; each "
            "relation's version goes up. Use it instead of deleting and re-creating a relation."
        ),
        input_schema=schemas.input_schema(
            {
                "relations": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            **schemas.RELATION["properties"],
                            "newFrom": {"type": "string", "description": "The new source entity"},
                            "newTo": {"type": "string", "description": "The new target entity"},
                            "newRelationType": {"type": "string", "description": "The new relation type"},
                        },
                        "required": ["from", "to", "relationType"],
                    },
                }
            },
            ["relations"],
        ),
        output_schema=schemas.output_schema(
            {
                "updated": {
                    "type": "array",
                    "items": schemas.closed(
                        {
                            "type": "object",
                            "properties": {**schemas.RELATION["properties"], "version": {"type": "integer"}},
                            "required": ["from", "to", "relationType", "version"],
                        }
                    ),
                }
            },
            ["updated"],
        ),
        annotations=WRITE,
        arguments=_UpdateRelationsArgs,
        run=update_relations,
    ),
    ToolSpec(
        name="upsert_entities",
        title="Upsert Entities",
        description=(
            "Create entities that are new and add the missing observations to those that exist (found by name "
            "or alias; their type is kept). Use it to re-assert facts safely when you are not sure an entity "
            "exists: nothing accumulated is overwritten and no observation is stored twice."
        ),
        input_schema=schemas.input_schema(
            # observations may be left out: an upsert of a name and type alone is a fair request.
            {"entities": {"type": "array", "items": {**schemas.ENTITY, "required": ["name", "entityType"]}}},
            ["entities"],
        ),
        output_schema=schemas.output_schema(
            {
                "results": {
                    "type": "array",
                    "items": schemas.closed(
                        {
                            "type": "object",
                            "properties": {
                                "name": _STRING,
                                "created": {"type": "boolean"},
                                "addedObservations": _STRINGS,
                            },
                            "required": ["name", "created", "addedObservations"],
                        }
                    ),
                }
            },
            ["results"],
        ),
        annotations=IDEMPOTENT_WRITE,
        arguments=_UpsertArgs,
        run=upsert_entities,
    ),
    ToolSpec(
        name="merge_entities",
        title="Merge Entities",
        description=(
            "Merge a duplicate entity (source) into another (target): the source's observations are added to the "
            "target without repeats, its relations are redirected to the target (dropping any that would become a "
            "loop or a repeat), its name and aliases become aliases of the target, and the source is deleted. All "
            "or nothing. Use it when the memory holds one thing under two names."
        ),
        input_schema=schemas.input_schema(
            {
                "source": {"type": "string", "description": "The duplicate to fold in and delete (name or alias)"},
                "target": {"type": "string", "description": "The entity to keep (name or alias)"},
            },
            ["source", "target"],
        ),
        output_schema=schemas.output_schema(
            {
                "source": _STRING,
                "target": _STRING,
                "movedObservations": {"type": "integer"},
                "addedObservations": {"type": "integer"},
                "redirectedRelations": {"type": "integer"},
                "droppedRelations": {"type": "integer"},
                "entity": schemas.ENTITY_WITH_ALIASES,
            },
            [
                "source",
                "target",
                "movedObservations",
                "addedObservations",
                "redirectedRelations",
                "droppedRelations",
                "entity",
            ],
        ),
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
        ),
        arguments=_MergeArgs,
        run=merge_entities,
    ),
    ToolSpec(
        name="compact",
        title="Compact Memory",
        description=(
            "Give back the disk space that deleted entities and observations still take, and report the size "
            "before and after. Nothing in the memory changes. Use it after deleting a lot; it is never needed "
            "for correctness."
        ),
        input_schema=schemas.input_schema({}, []),
        output_schema=schemas.output_schema(
            {
                "bytesBefore": {"type": "integer"},
                "bytesAfter": {"type": "integer"},
                "entities": {"type": "integer"},
                "relations": {"type": "integer"},
            },
            ["bytesBefore", "bytesAfter", "entities", "relations"],
        ),
        annotations=IDEMPOTENT_WRITE,
        arguments=_NoArgs,
        run=compact,
        # VACUUM rewrites the whole file: minutes on a huge memory, and never partial.
        time_limited=False,
    ),
)
