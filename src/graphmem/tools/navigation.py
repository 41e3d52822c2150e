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
    ENTITY_EXTRAS,
    ENTITY_KEYS,
    NAME_IN,
    NAMES,
    SMALLEST_RELATION,
    answer,
    cut_list,
    entity_with_records,
    integer_schema,
    room_after,
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
    with ctx.graph.reading():
        counts = ctx.graph.store.entity_type_counts()
    return _type_list(ctx, counts, "entity types")


def list_relation_types(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    with ctx.graph.reading():
        counts = ctx.graph.store.relation_type_counts()
    return _type_list(ctx, counts, "relation types")


def graph_stats(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    with ctx.graph.reading():
        counts = ctx.graph.store.counts()
        entity_types = len(ctx.graph.store.entity_type_counts())
        relation_types = len(ctx.graph.store.relation_type_counts())
    structured: dict[str, Any] = {
        "entities": counts.entities,
        "relations": counts.relations,
        "totalObservations": counts.observations,
        "entityTypes": entity_types,
        "relationTypes": relation_types,
    }
    vectors = ctx.graph.meaning.vectors
    if ctx.graph.meaning.enabled and vectors is not None:
        # Texts (names with aliases, observations) with a vector, and those still waiting for one.
        progress = vectors.vector_progress()
        structured["embedding"] = {"done": progress.embedded, "waiting": progress.waiting}
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


_TYPE_COUNTS = schemas.shape({"types": "array", "totalTypes": "integer"})

NAVIGATION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_entity",
        title="Get Entity",
        description=(
            "Get one entity by name or alias, with its observations' ids and versions but no relations. "
            "To check what memory holds about one thing, or find an observation's id."
        ),
        input_schema=schemas.arguments({"name": NAME_IN}, ["name"]),
        output_schema=schemas.shape({**ENTITY_KEYS, "observationRecords": "array"}, ENTITY_EXTRAS),
        annotations=READ,
        arguments=_NameArgs,
        run=get_entity,
    ),
    ToolSpec(
        name="batch_get_entities",
        title="Get Several Entities",
        description="Get several entities by name or alias, in order, null for a name not in memory.",
        input_schema=schemas.arguments({"names": NAMES}, ["names"]),
        output_schema=schemas.shape({"entities": "array"}, {"truncated": "object"}),
        annotations=READ,
        arguments=_NamesArgs,
        run=batch_get_entities,
    ),
    ToolSpec(
        name="describe_entity",
        title="Describe Entity",
        description=(
            "Get one entity with every relation touching it and its neighbours' names. To see how one thing "
            "fits in; page a hub's relations with offset and limit."
        ),
        input_schema=schemas.arguments(
            {
                "name": NAME_IN,
                "offset": integer_schema("", 0, _LIMITS.max_offset),
                "limit": integer_schema("", 1, _LIMITS.max_offset),
            },
            ["name"],
        ),
        output_schema=schemas.shape(
            {
                "entity": "object",
                "relations": "array",
                "neighbors": "array",
                "degree": "integer",
                "neighborCount": "integer",
            },
            {"truncated": "object"},
        ),
        annotations=READ,
        arguments=_DescribeArgs,
        run=describe_entity,
    ),
    ToolSpec(
        name="list_entity_types",
        title="List Entity Types",
        description="List entity types with counts, most common first. Before creating entities, to reuse a type.",
        input_schema=schemas.arguments({}),
        output_schema=_TYPE_COUNTS,
        annotations=READ,
        arguments=_NoArgs,
        run=list_entity_types,
    ),
    ToolSpec(
        name="list_relation_types",
        title="List Relation Types",
        description="List relation types with counts, most common first. Before creating relations, to reuse a type.",
        input_schema=schemas.arguments({}),
        output_schema=_TYPE_COUNTS,
        annotations=READ,
        arguments=_NoArgs,
        run=list_relation_types,
    ),
    ToolSpec(
        name="graph_stats",
        title="Graph Statistics",
        description=(
            "Count entities, relations, observations and types, and texts embedded or waiting for search by "
            "meaning. To judge a memory's size before reading it."
        ),
        input_schema=schemas.arguments({}),
        output_schema=schemas.shape(
            {
                "entities": "integer",
                "relations": "integer",
                "totalObservations": "integer",
                "entityTypes": "integer",
                "relationTypes": "integer",
            },
            {"embedding": "object"},
        ),
        annotations=READ,
        arguments=_NoArgs,
        run=graph_stats,
    ),
    ToolSpec(
        name="search_relations",
        title="Search Relations",
        description=(
            "Find relations by from, to and/or relationType (names or aliases; one left out matches any). "
            "For questions like who works at Acme (to: Acme, relationType: works_at)."
        ),
        input_schema=schemas.arguments(
            {
                "from": {"type": "string"},
                "to": {"type": "string"},
                "relationType": {"type": "string"},
                "offset": integer_schema("", 0, _LIMITS.max_offset),
                "limit": integer_schema("", 1, _LIMITS.max_page_size),
            }
        ),
        output_schema=schemas.shape({"relations": "array", "total": "integer"}, {"truncated": "object"}),
        annotations=READ,
        arguments=_SearchRelationsArgs,
        run=search_relations,
    ),
    ToolSpec(
        name="get_observation_history",
        title="Get Observation History",
        description=(
            "Get every version of one observation, oldest first (corrections made with add_observations "
            "supersedes). To see how a fact changed; get_entity lists observation ids."
        ),
        input_schema=schemas.arguments(
            {"entityName": NAME_IN, "observationId": {"type": "string"}}, ["entityName", "observationId"]
        ),
        output_schema=schemas.shape({"entityName": "string", "history": "array"}, {"currentId": "string"}),
        annotations=READ,
        arguments=_HistoryArgs,
        run=get_observation_history,
    ),
)
