"""Maintenance tools: update, rename, upsert and merge entities, correct relations, compact."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import mcp_types as types
from pydantic import Field

from graphmem.core.models import Entity
from graphmem.core.names import types_agree
from graphmem.domain import duplicates, maintenance
from graphmem.domain.maintenance import EntityUpdate, RelationUpdate
from graphmem.tools import schemas
from graphmem.tools.base import (
    IDEMPOTENT_WRITE,
    READ,
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
from graphmem.tools.clash_notes import clash_note
from graphmem.tools.duplicate_notes import duplicate_note, merge_call

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
    kinds = {item.name: item.entity_type for item in args.entities}
    # Created where the call works (domain/maintenance.py), as the duplicate note's merge must know.
    home = ctx.graph.scope.home
    new_entities = [
        Entity(result.name, kinds.get(result.name, ""), (), None, home) for result in results if result.created
    ]
    notes = [
        note
        for note in (
            clash_note([(result.name, clash) for result in results for clash in result.clashes]),
            duplicate_note(duplicates.duplicates_of(ctx.graph, new_entities)),
        )
        if note is not None
    ]
    output = _answer({"results": items}, summary)
    return replace(output, notes=(*output.notes, *notes)) if notes else output


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


# -- find_duplicates ---------------------------------------------------------------------------


class _FindDuplicatesArgs(ToolArgs):
    entity_type: Omittable[str] = Field(default=None, alias="entityType")
    limit: int = Field(default=20, ge=1, le=100)
    offset: int = Field(default=0, ge=0, le=1_000_000_000)


def find_duplicates(ctx: ToolContext, args: _FindDuplicatesArgs) -> ToolOutput:
    found = duplicates.find_duplicates(ctx.graph)
    if args.entity_type is not None:
        found = [item for item in found if types_agree(item.entity_type, args.entity_type)]
    page = found[args.offset : args.offset + args.limit]
    pairs = [
        {
            "names": [item.name, item.existing],
            "entityType": item.entity_type,
            "why": item.why,
            "merge": merge_call(item),
        }
        for item in page
    ]
    structured: dict[str, Any] = {"pairs": pairs, "total": len(found)}
    shown = args.offset + len(page)
    summary = f"{len(found)} {plural(len(found), 'pair', 'pairs')} of entities that probably name one thing"
    if shown < len(found):
        structured["nextOffset"] = shown
        summary += f"; showing {len(page)}, ask again with offset {shown} for more"
    summary += ". merge_entities with a pair's merge folds its first name into the second."
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
_NAME_IN = {"type": "string", "description": "Exact name or alias"}
_UPDATED = schemas.shape({"updated": "array"})

MAINTENANCE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="update_entities",
        title="Update Entities",
        description=(
            "Change entities' type, aliases (the full new list) or name (newName; relations follow, the old name "
            "stays an alias), all or nothing. For corrections; observations change with add_ and delete_observations."
        ),
        input_schema=schemas.arguments(
            {
                "entities": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": _NAME_IN,
                            "entityType": _STRING,
                            "aliases": _STRINGS,
                            "newName": {"type": "string", "minLength": 1},
                        },
                        "required": ["name"],
                    },
                }
            },
            ["entities"],
        ),
        output_schema=_UPDATED,
        annotations=IDEMPOTENT_WRITE,
        arguments=_UpdateEntitiesArgs,
        run=update_entities,
    ),
    ToolSpec(
        name="update_relations",
        title="Update Relations",
        description=(
            "Correct relations found by exact from, to and relationType to newFrom, newTo and/or newRelationType "
            "(none: mark them confirmed), all or nothing. Instead of deleting and re-creating a relation."
        ),
        input_schema=schemas.arguments(
            {
                "relations": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "from": _STRING,
                            "to": _STRING,
                            "relationType": _STRING,
                            "newFrom": _STRING,
                            "newTo": _STRING,
                            "newRelationType": _STRING,
                        },
                        "required": ["from", "to", "relationType"],
                    },
                }
            },
            ["relations"],
        ),
        output_schema=_UPDATED,
        annotations=WRITE,
        arguments=_UpdateRelationsArgs,
        run=update_relations,
    ),
    ToolSpec(
        name="upsert_entities",
        title="Upsert Entities",
        description=(
            "Create the entities that are new and add the missing observations to those that exist (by name or "
            "alias). To re-assert facts safely when unsure an entity exists."
        ),
        input_schema=schemas.arguments(
            {
                "entities": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": _STRING, "entityType": _STRING, "observations": _STRINGS},
                        # observations may be left out: an upsert of a name and type alone is a fair request.
                        "required": ["name", "entityType"],
                    },
                }
            },
            ["entities"],
        ),
        output_schema=schemas.shape({"results": "array"}),
        annotations=IDEMPOTENT_WRITE,
        arguments=_UpsertArgs,
        run=upsert_entities,
    ),
    ToolSpec(
        name="merge_entities",
        title="Merge Entities",
        description=(
            "Merge a duplicate (source) into target: observations and relations move over, the source's names "
            "become aliases, and the source is deleted. When memory holds one thing under two names."
        ),
        input_schema=schemas.arguments({"source": _NAME_IN, "target": _NAME_IN}, ["source", "target"]),
        output_schema=schemas.shape(
            {
                "source": "string",
                "target": "string",
                "movedObservations": "integer",
                "addedObservations": "integer",
                "redirectedRelations": "integer",
                "droppedRelations": "integer",
                "entity": "object",
            }
        ),
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
        ),
        arguments=_MergeArgs,
        run=merge_entities,
    ),
    ToolSpec(
        name="find_duplicates",
        title="Find Duplicates",
        description=(
            "Pairs of entities that probably name one thing (alias, nickname, initials, acronym, typo), best "
            "first, each with the merge_entities call that folds it."
        ),
        input_schema=schemas.arguments(
            {
                "entityType": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "offset": {"type": "integer", "minimum": 0},
            }
        ),
        output_schema=schemas.shape({"pairs": "array", "total": "integer"}, {"nextOffset": "integer"}),
        annotations=READ,
        arguments=_FindDuplicatesArgs,
        run=find_duplicates,
    ),
    ToolSpec(
        name="compact",
        title="Compact Memory",
        description=(
            "Give back the disk space deleted data still takes, reporting the size before and after; nothing "
            "in memory changes. After deleting a lot."
        ),
        input_schema=schemas.arguments({}),
        output_schema=schemas.shape(
            {"bytesBefore": "integer", "bytesAfter": "integer", "entities": "integer", "relations": "integer"}
        ),
        annotations=IDEMPOTENT_WRITE,
        arguments=_NoArgs,
        run=compact,
        # VACUUM rewrites the whole file: minutes on a huge memory, and never partial.
        time_limited=False,
    ),
)
