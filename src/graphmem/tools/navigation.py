"""Entity tools of spec 004: look entities up by name or alias, describe them, count what is there."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.core.limits import Limits
from graphmem.domain import navigation
from graphmem.tools import schemas
from graphmem.tools.base import READ, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec
from graphmem.tools.budget import fit_items, most_that_fit
from graphmem.tools.wire import (
    ENTITY,
    NAME_IN,
    NAMES,
    RELATION,
    SMALLEST_RELATION,
    answer,
    cut_list,
    entity_with_records,
    integer_schema,
    room_after,
    string_schema,
    truncated_schema,
)

__all__ = ["NAVIGATION_TOOLS"]


# -- get_entity, batch_get_entities -----------------------------------------------------------


_LIMITS = Limits()


class _NameArgs(ToolArgs):
    name: str


def get_entity(ctx: ToolContext, args: _NameArgs) -> ToolOutput:
    entity = navigation.get_entity(ctx.graph, args.name)
    return answer(entity_with_records(entity), [])


class _NamesArgs(ToolArgs):
    names: list[str] = Field(min_length=1)


def batch_get_entities(ctx: ToolContext, args: _NamesArgs) -> ToolOutput:
    found = navigation.batch_get(ctx.graph, args.names)
    items: list[dict[str, Any] | None] = [None if entity is None else entity_with_records(entity) for entity in found]
    notes: list[str] = []
    shown, note = cut_list(
        ctx.response_budget,
        [item or {} for item in items],
        "entities",
        "Ask again for the names from `nextOffset` on.",
    )
    structured: dict[str, Any] = {"entities": items[:shown]}
    if note:
        structured["truncated"] = {"omittedEntities": len(items) - shown, "nextOffset": shown}
        notes.append(note)
    missing = [name for name, entity in zip(args.names, found, strict=True) if entity is None]
    if missing:
        notes.append(f"Not found (null): {', '.join(missing)}. Use search_nodes to find the right names.")
    return answer(structured, notes)


# -- describe_entity ---------------------------------------------------------------------------


class _DescribeArgs(ToolArgs):
    name: str
    offset: int = Field(default=0, ge=0, le=_LIMITS.max_offset)
    limit: Omittable[int] = Field(default=None, ge=1, le=_LIMITS.max_offset)


def describe_entity(ctx: ToolContext, args: _DescribeArgs) -> ToolOutput:
    described = navigation.describe(ctx.graph, args.name)
    name = described.entity.name
    entity = entity_with_records(described.entity)
    end = described.degree if args.limit is None else min(described.degree, args.offset + args.limit)
    # A hub can have thousands of relations: shape no more than the budget could show.
    most = most_that_fit(ctx.response_budget, SMALLEST_RELATION)
    if most is not None:
        end = min(end, args.offset + most)
    relations = [
        {**relation.to_wire(), "direction": direction} for relation, direction in described.relations[args.offset : end]
    ]
    shown = fit_items(relations, room_after(ctx.response_budget, entity))
    structured: dict[str, Any] = {"entity": entity, "relations": relations[:shown]}
    notes: list[str] = []
    if args.offset + shown < described.degree:
        # A page of a hub's relations: its neighbours are those of the relations shown.
        neighbours = dict.fromkeys(item["to"] if item["from"] == name else item["from"] for item in relations[:shown])
        neighbours.pop(name, None)
        structured["neighbors"] = list(neighbours)
        structured["truncated"] = {
            "omittedRelations": described.degree - args.offset - shown,
            "nextOffset": args.offset + shown,
        }
        notes.append(
            f"Showing relations {args.offset + 1} to {args.offset + shown} of {described.degree}"
            + (" (the response budget allows no more)" if shown < len(relations) else "")
            + f"; ask with offset {args.offset + shown} for the next ones."
        )
    else:
        structured["neighbors"] = list(described.neighbours)
    structured["degree"] = described.degree
    structured["neighborCount"] = len(described.neighbours)
    return answer(structured, notes)


# -- list types, graph_stats -------------------------------------------------------------------


class _NoArgs(ToolArgs):
    pass


def _type_list(ctx: ToolContext, counts: list[tuple[str, int]], what: str) -> ToolOutput:
    items = [{"type": name, "count": count} for name, count in counts]
    shown, note = cut_list(ctx.response_budget, items, what, "The most common come first; the rest are rarer.")
    structured: dict[str, Any] = {"types": items[:shown], "totalTypes": len(items)}
    return answer(structured, [note] if note else [])


def list_entity_types(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    with ctx.graph.store.read():
        counts = ctx.graph.store.entity_type_counts()
    return _type_list(ctx, counts, "entity types")


def list_relation_types(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    with ctx.graph.store.read():
        counts = ctx.graph.store.relation_type_counts()
    return _type_list(ctx, counts, "relation types")


def graph_stats(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    with ctx.graph.store.read():
        counts = ctx.graph.store.counts()
        entity_types = len(ctx.graph.store.entity_type_counts())
        relation_types = len(ctx.graph.store.relation_type_counts())
    structured = {
        "entities": counts.entities,
        "relations": counts.relations,
        "totalObservations": counts.observations,
        "entityTypes": entity_types,
        "relationTypes": relation_types,
    }
    return answer(structured, [])


# -- search_relations --------------------------------------------------------------------------


class _SearchRelationsArgs(ToolArgs):
    from_: Omittable[str] = Field(default=None, alias="from")
    to: Omittable[str] = None
    relation_type: Omittable[str] = Field(default=None, alias="relationType")
    offset: int = Field(default=0, ge=0, le=_LIMITS.max_offset)
    limit: Omittable[int] = Field(default=None, ge=1, le=_LIMITS.max_page_size)


def search_relations(ctx: ToolContext, args: _SearchRelationsArgs) -> ToolOutput:
    load = most_that_fit(ctx.response_budget, SMALLEST_RELATION)
    limit = args.limit if load is None else min(args.limit or load, load)
    relations, total = navigation.relations_matching(
        ctx.graph, args.from_, args.to, args.relation_type, args.offset, limit
    )
    items = [relation.to_wire() for relation in relations]
    shown = fit_items(items, ctx.response_budget)
    structured: dict[str, Any] = {"relations": items[:shown], "total": total}
    notes: list[str] = []
    asked_end = total if args.limit is None else min(total, args.offset + args.limit)
    if args.offset + shown < asked_end:
        structured["truncated"] = {
            "omittedRelations": asked_end - args.offset - shown,
            "nextOffset": args.offset + shown,
        }
        notes.append(
            f"Showing {shown} of {asked_end - args.offset} matching relations to keep this answer within the "
            f"response budget of about {ctx.response_budget:,} tokens; ask with offset {args.offset + shown} "
            "for more, or narrow the search."
        )
    return answer(structured, notes)


# -- get_observation_history -------------------------------------------------------------------


class _HistoryArgs(ToolArgs):
    entity_name: str = Field(alias="entityName")
    observation_id: str = Field(alias="observationId")


def get_observation_history(ctx: ToolContext, args: _HistoryArgs) -> ToolOutput:
    name, chain = navigation.observation_history(ctx.graph, args.entity_name, args.observation_id)
    current = chain[-1].id if chain[-1].current else None
    structured: dict[str, Any] = {"entityName": name, "history": [record.to_wire() for record in chain]}
    if current is not None:
        structured["currentId"] = current
    return answer(structured, [])


_TYPE_COUNTS = schemas.output_schema(
    {
        "types": {
            "type": "array",
            "items": schemas.closed(
                {
                    "type": "object",
                    "properties": {"type": {"type": "string"}, "count": {"type": "integer"}},
                    "required": ["type", "count"],
                }
            ),
        },
        "totalTypes": {"type": "integer"},
    },
    ["types", "totalTypes"],
)

NAVIGATION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_entity",
        title="Get Entity",
        description=(
            "Get one entity (type, observations, aliases) by its exact name or an alias, without its relations. "
            "Use it to check what the memory holds about one thing you can name; use describe_entity to see its "
            "relations too, and search_nodes when you do not know the name."
        ),
        input_schema=schemas.input_schema({"name": NAME_IN}, ["name"]),
        output_schema={**ENTITY, "$schema": schemas.DRAFT},
        annotations=READ,
        arguments=_NameArgs,
        run=get_entity,
    ),
    ToolSpec(
        name="batch_get_entities",
        title="Get Several Entities",
        description=(
            "Get several entities by exact name or alias in one call, in the order asked, with null for a name "
            "that is not in memory. Use it instead of calling get_entity once per name."
        ),
        input_schema=schemas.input_schema(
            {"names": {**NAMES, "description": "The names (or aliases) of the entities to get"}}, ["names"]
        ),
        output_schema=schemas.output_schema(
            {
                "entities": {"type": "array", "items": {"anyOf": [ENTITY, {"type": "null"}]}},
                "truncated": truncated_schema(omittedEntities="names not answered", nextOffset="where to continue"),
            },
            ["entities"],
        ),
        annotations=READ,
        arguments=_NamesArgs,
        run=batch_get_entities,
    ),
    ToolSpec(
        name="describe_entity",
        title="Describe Entity",
        description=(
            "Get one entity with every relation touching it (each marked outgoing, incoming or self), the names "
            "of its neighbours and its degree. Use it to see how one thing fits in the memory; for a hub with "
            "many relations, page them with offset and limit. Use get_neighbors to go further than one hop."
        ),
        input_schema=schemas.input_schema(
            {
                "name": NAME_IN,
                "offset": integer_schema("How many of its relations to skip (default 0)", 0, _LIMITS.max_offset),
                "limit": integer_schema("How many of its relations to show at most", 1, _LIMITS.max_offset),
            },
            ["name"],
        ),
        output_schema=schemas.output_schema(
            {
                "entity": ENTITY,
                "relations": {
                    "type": "array",
                    "items": schemas.closed(
                        {
                            "type": "object",
                            "properties": {
                                **schemas.RELATION["properties"],
                                "direction": {"type": "string", "enum": ["outgoing", "incoming", "self"]},
                            },
                            "required": ["from", "to", "relationType", "direction"],
                        }
                    ),
                },
                "neighbors": {"type": "array", "items": {"type": "string"}},
                "degree": {"type": "integer", "description": "How many relations touch the entity"},
                "neighborCount": {"type": "integer", "description": "How many distinct names it is related to"},
                "truncated": truncated_schema(
                    omittedRelations="relations not shown", nextOffset="the offset to ask next"
                ),
            },
            ["entity", "relations", "neighbors", "degree", "neighborCount"],
        ),
        annotations=READ,
        arguments=_DescribeArgs,
        run=describe_entity,
    ),
    ToolSpec(
        name="list_entity_types",
        title="List Entity Types",
        description=(
            "List the entity types in memory with how many entities have each, most common first. Use it before "
            "creating entities, to reuse an existing type instead of inventing a near-duplicate, or to learn what "
            "a memory holds; then read_graph with entityType lists one type."
        ),
        input_schema=schemas.input_schema({}, []),
        output_schema=_TYPE_COUNTS,
        annotations=READ,
        arguments=_NoArgs,
        run=list_entity_types,
    ),
    ToolSpec(
        name="list_relation_types",
        title="List Relation Types",
        description=(
            "List the relation types in memory with how many relations have each, most common first. Use it "
            "before creating relations, to reuse an existing type (works_at, not worksAt and employed_by too); "
            "then search_relations with relationType lists one type."
        ),
        input_schema=schemas.input_schema({}, []),
        output_schema=_TYPE_COUNTS,
        annotations=READ,
        arguments=_NoArgs,
        run=list_relation_types,
    ),
    ToolSpec(
        name="graph_stats",
        title="Graph Statistics",
        description=(
            "Count what the memory holds: entities, relations, observations, entity types and relation types. "
            "Use it to judge how big the memory is before reading it whole."
        ),
        input_schema=schemas.input_schema({}, []),
        output_schema=schemas.output_schema(
            {
                "entities": {"type": "integer"},
                "relations": {"type": "integer"},
                "totalObservations": {"type": "integer"},
                "entityTypes": {"type": "integer"},
                "relationTypes": {"type": "integer"},
            },
            ["entities", "relations", "totalObservations", "entityTypes", "relationTypes"],
        ),
        annotations=READ,
        arguments=_NoArgs,
        run=graph_stats,
    ),
    ToolSpec(
        name="search_relations",
        title="Search Relations",
        description=(
            "Find relations by their source (from), target (to) and/or type (relationType); a field left out "
            "or empty matches anything. Use it for questions like 'who works at Acme' "
            "(to: Acme, relationType: works_at). Endpoints may be given by alias. Paged with offset and limit."
        ),
        input_schema=schemas.input_schema(
            {
                "from": string_schema("The exact name (or alias) of the entity the relations start from"),
                "to": string_schema("The exact name (or alias) of the entity the relations end at"),
                "relationType": string_schema("The exact relation type"),
                "offset": integer_schema("How many matching relations to skip (default 0)", 0, _LIMITS.max_offset),
                "limit": integer_schema("How many relations to return at most", 1, _LIMITS.max_page_size),
            },
            [],
        ),
        output_schema=schemas.output_schema(
            {
                "relations": {"type": "array", "items": RELATION},
                "total": {"type": "integer", "description": "How many relations match, across all pages"},
                "truncated": truncated_schema(
                    omittedRelations="matches not shown", nextOffset="the offset to ask next"
                ),
            },
            ["relations", "total"],
        ),
        annotations=READ,
        arguments=_SearchRelationsArgs,
        run=search_relations,
    ),
    ToolSpec(
        name="get_observation_history",
        title="Get Observation History",
        description=(
            "Get every version of one fact of an entity, oldest first: the observations it corrected, itself, and "
            "those that corrected it (add_observations with supersedes). Use it to see how a fact changed over "
            "time, e.g. 'Uses python-docx 1.1.0' then 'Uses python-docx 1.2.0'; the read tools show only the "
            "current version. get_entity lists the observation ids."
        ),
        input_schema=schemas.input_schema(
            {
                "entityName": NAME_IN,
                "observationId": string_schema("The id of any version of the observation, e.g. obs_3"),
            },
            ["entityName", "observationId"],
        ),
        output_schema=schemas.output_schema(
            {
                "entityName": {"type": "string"},
                "history": {"type": "array", "items": schemas.OBSERVATION_RECORD},
                "currentId": {"type": "string", "description": "The version shown today; absent when archived"},
            },
            ["entityName", "history"],
        ),
        annotations=READ,
        arguments=_HistoryArgs,
        run=get_observation_history,
    ),
)
