"""Entity and traversal tools of spec 004: look things up, describe them, find how they connect.

Each answer is cut to the response budget like the official reads, and each traversal
says in `stoppedAt` which bound stopped it before it saw everything it could reach.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphmem import navigation, schemas
from graphmem.models import Graph
from graphmem.navigation import Bound
from graphmem.tools.base import READ, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json, entity_wire
from graphmem.tools.budget import CHARS_PER_TOKEN, SMALLEST_ENTITY, cut_note, fit_graph, fit_items, most_that_fit

__all__ = ["NAVIGATION_TOOLS"]

# The deepest each traversal may go: past these a graph of agent memories is everything.
MAX_NEIGHBOUR_DEPTH = 5
MAX_PATH_DEPTH = 12
MAX_ALL_PATHS_DEPTH = 8
MAX_PATHS = 1000


def _answer(structured: dict[str, Any], notes: list[str]) -> ToolOutput:
    return ToolOutput(structured, dump_json(structured), tuple(notes))


def _stopped(bound: Bound | None, structured: dict[str, Any], notes: list[str], advice: str) -> None:
    """Say in the answer which bound stopped a traversal, if one did."""
    if bound is None:
        return
    structured["stoppedAt"] = {"bound": bound.name, "limit": bound.limit}
    notes.append(f"The search stopped at {bound.name} = {bound.limit:,} before it had seen everything. {advice}")


def _fit_entities(ctx: ToolContext, graph: Graph, how: str, notes: list[str], unloaded: int = 0) -> dict[str, Any]:
    """The graph as wire JSON with aliases, cut to the budget at an entity boundary.

    Args:
        unloaded: entities known to follow but not fetched, because the budget could not
            show them anyway; they count as left out.
    """
    fitted = fit_graph(graph, ctx.response_budget)
    wire: dict[str, Any] = {
        "entities": [entity_wire(entity) for entity in fitted.graph.entities],
        "relations": [relation.to_wire() for relation in fitted.graph.relations],
    }
    omitted = fitted.omitted_entities + unloaded
    if omitted:
        shown = len(fitted.graph.entities)
        wire["truncated"] = {"omittedEntities": omitted, "nextOffset": shown}
        notes.append(cut_note(shown, omitted, ctx.response_budget, how))
    return wire


def _cut_list(budget: int, items: list[dict[str, Any]], what: str, how: str) -> tuple[int, str | None]:
    """How many of `items` fit the budget, and the note to give when not all do."""
    shown = fit_items(items, budget)
    if shown == len(items):
        return shown, None
    omitted = len(items) - shown
    return shown, (
        f"Showing {shown} of {len(items)} {what}: the other {omitted} were left out to keep this answer within "
        f"the response budget of about {budget:,} tokens. {how}"
    )


def _room_after(budget: int, item: dict[str, Any]) -> int:
    """The budget left for a list once `item` is in the answer (0 stays unlimited)."""
    if budget <= 0:
        return 0
    return max(1, budget - len(dump_json(item)) // CHARS_PER_TOKEN)


_SMALLEST_RELATION = len(dump_json({"from": "", "to": "", "relationType": ""})) + 8


# -- get_entity, batch_get_entities -----------------------------------------------------------


class _NameArgs(ToolArgs):
    name: str


def get_entity(ctx: ToolContext, args: _NameArgs) -> ToolOutput:
    entity = navigation.get_entity(ctx.graph, args.name)
    return _answer(entity_wire(entity), [])


class _NamesArgs(ToolArgs):
    names: list[str] = Field(min_length=1)


def batch_get_entities(ctx: ToolContext, args: _NamesArgs) -> ToolOutput:
    found = navigation.batch_get(ctx.graph, args.names)
    items: list[dict[str, Any] | None] = [None if entity is None else entity_wire(entity) for entity in found]
    notes: list[str] = []
    shown, note = _cut_list(
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
    return _answer(structured, notes)


# -- describe_entity ---------------------------------------------------------------------------


class _DescribeArgs(ToolArgs):
    name: str
    offset: int = Field(default=0, ge=0)
    limit: int | None = Field(default=None, ge=1)


def describe_entity(ctx: ToolContext, args: _DescribeArgs) -> ToolOutput:
    described = navigation.describe(ctx.graph, args.name)
    name = described.entity.name
    entity = entity_wire(described.entity)
    end = described.degree if args.limit is None else min(described.degree, args.offset + args.limit)
    # A hub can have thousands of relations: shape no more than the budget could show.
    most = most_that_fit(ctx.response_budget, _SMALLEST_RELATION)
    if most is not None:
        end = min(end, args.offset + most)
    relations = [
        {**relation.to_wire(), "direction": direction} for relation, direction in described.relations[args.offset : end]
    ]
    shown = fit_items(relations, _room_after(ctx.response_budget, entity))
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
    return _answer(structured, notes)


# -- list types, graph_stats -------------------------------------------------------------------


class _NoArgs(ToolArgs):
    pass


def _type_list(ctx: ToolContext, counts: list[tuple[str, int]], what: str) -> ToolOutput:
    items = [{"type": name, "count": count} for name, count in counts]
    shown, note = _cut_list(ctx.response_budget, items, what, "The most common come first; the rest are rarer.")
    structured: dict[str, Any] = {"types": items[:shown], "totalTypes": len(items)}
    return _answer(structured, [note] if note else [])


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
    return _answer(structured, [])


# -- search_relations --------------------------------------------------------------------------


class _SearchRelationsArgs(ToolArgs):
    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    relation_type: str | None = Field(default=None, alias="relationType")
    offset: int = Field(default=0, ge=0)
    limit: int | None = Field(default=None, ge=1, le=1000)


def search_relations(ctx: ToolContext, args: _SearchRelationsArgs) -> ToolOutput:
    load = most_that_fit(ctx.response_budget, _SMALLEST_RELATION)
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
    return _answer(structured, notes)


# -- traversal -----------------------------------------------------------------------------------


class _NeighboursArgs(ToolArgs):
    name: str
    depth: int = Field(default=1, ge=1, le=MAX_NEIGHBOUR_DEPTH)
    direction: Literal["both", "outgoing", "incoming"] = "both"
    relation_type: str | None = Field(default=None, alias="relationType")


def get_neighbors(ctx: ToolContext, args: _NeighboursArgs) -> ToolOutput:
    found = navigation.neighbourhood(
        ctx.graph,
        [args.name],
        args.depth,
        direction=args.direction,
        relation_type=args.relation_type,
        max_depth=MAX_NEIGHBOUR_DEPTH,
    )
    # Fetch no more entities than the budget could show, nearest first.
    load = most_that_fit(ctx.response_budget, SMALLEST_ENTITY)
    names = list(found.names if load is None else found.names[:load])
    with ctx.graph.store.read():
        entities = {entity.name: entity for entity in reversed(ctx.graph.store.get_entities(names))}
    ordered = tuple(entities[name] for name in names if name in entities)
    notes: list[str] = []
    wire = _fit_entities(
        ctx,
        Graph(ordered, found.relations),
        "Ask with a smaller depth, a relationType or a direction.",
        notes,
        unloaded=len(found.names) - len(names),
    )
    for item in wire["entities"]:
        item["distance"] = found.distances[item["name"]]
    kept = {item["name"] for item in wire["entities"]}
    kept.update(name for name in found.distances if found.distances[name] == 0)
    dangling = [name for name in found.names if name not in entities and name in found.distances]
    structured: dict[str, Any] = {
        "entities": wire["entities"],
        "relations": [r for r in wire["relations"] if r["from"] in kept or r["to"] in kept],
        "totalReached": len(found.names),
    }
    if dangling:
        structured["unknownNames"] = dangling
    if "truncated" in wire:
        structured["truncated"] = wire["truncated"]
    _stopped(found.bound, structured, notes, "Ask with a smaller depth, a relationType or a direction.")
    return _answer(structured, notes)


class _PathArgs(ToolArgs):
    from_: str = Field(alias="from")
    to: str
    max_depth: int = Field(default=6, alias="maxDepth", ge=1, le=MAX_PATH_DEPTH)


def find_path(ctx: ToolContext, args: _PathArgs) -> ToolOutput:
    found = navigation.shortest_path(ctx.graph, args.from_, args.to, args.max_depth, most_depth=MAX_PATH_DEPTH)
    structured: dict[str, Any] = {
        "found": found.found,
        "path": list(found.names),
        "relations": [relation.to_wire() for relation in found.relations],
        "length": len(found.relations),
    }
    notes: list[str] = []
    if not found.found and found.bound is None:
        notes.append(f"{args.from_} and {args.to} are not connected, whichever way the relations are followed.")
    _stopped(found.bound, structured, notes, "No path was found within it; a longer one may exist.")
    return _answer(structured, notes)


class _AllPathsArgs(ToolArgs):
    from_: str = Field(alias="from")
    to: str
    max_depth: int = Field(default=4, alias="maxDepth", ge=1, le=MAX_ALL_PATHS_DEPTH)
    max_paths: int = Field(default=10, alias="maxPaths", ge=1, le=MAX_PATHS)


def find_all_paths(ctx: ToolContext, args: _AllPathsArgs) -> ToolOutput:
    found = navigation.all_paths(
        ctx.graph, args.from_, args.to, args.max_depth, args.max_paths, most_depth=MAX_ALL_PATHS_DEPTH
    )
    paths = [
        {"path": list(names), "relations": [relation.to_wire() for relation in relations]}
        for names, relations in found.paths
    ]
    notes: list[str] = []
    shown, note = _cut_list(ctx.response_budget, paths, "paths", "Ask with a smaller maxPaths or maxDepth.")
    structured: dict[str, Any] = {"paths": paths[:shown], "count": len(paths)}
    if note:
        structured["truncated"] = {"omittedPaths": len(paths) - shown}
        notes.append(note)
    _stopped(found.bound, structured, notes, "There may be more paths than these.")
    return _answer(structured, notes)


class _SubgraphArgs(ToolArgs):
    names: list[str] = Field(min_length=1)
    depth: int = Field(default=1, ge=0, le=MAX_NEIGHBOUR_DEPTH)


def extract_subgraph(ctx: ToolContext, args: _SubgraphArgs) -> ToolOutput:
    found = navigation.subgraph(
        ctx.graph,
        args.names,
        args.depth,
        max_depth=MAX_NEIGHBOUR_DEPTH,
        load_at_most=most_that_fit(ctx.response_budget, SMALLEST_ENTITY),
    )
    notes: list[str] = []
    structured = _fit_entities(
        ctx, found.graph, "Ask with fewer names or a smaller depth.", notes, unloaded=found.unloaded
    )
    structured["notFound"] = list(found.not_found)
    if found.not_found:
        notes.append(
            f"Not found: {', '.join(found.not_found)}. Names are exact and case-sensitive; "
            "use search_nodes to find the right name."
        )
    _stopped(found.bound, structured, notes, "Ask with fewer names or a smaller depth.")
    return _answer(structured, notes)


# -- listings ----------------------------------------------------------------------------------------


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _integer(description: str, minimum: int, maximum: int | None = None, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum, "description": description}
    if maximum is not None:
        schema["maximum"] = maximum
    if default is not None:
        schema["default"] = default
    return schema


_ENTITY = schemas.ENTITY_WITH_ALIASES
_RELATION = schemas.closed(schemas.RELATION)
_NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_NAME_IN = _string("The entity's exact name (case-sensitive) or one of its aliases")

_STOPPED_AT: dict[str, Any] = {
    "type": "object",
    "description": "Present when a bound stopped the traversal before it saw everything it could reach: "
    "which bound (maxDepth, maxPaths, maxNodes or maxSteps) and its value.",
    "properties": {"bound": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["bound", "limit"],
    "additionalProperties": False,
}


def _cut(**counts: str) -> dict[str, Any]:
    """The `truncated` part of an answer cut to the response budget or paged."""
    properties = {name: {"type": "integer", "description": text} for name, text in counts.items()}
    return {
        "type": "object",
        "description": "Present when the answer was cut: how much was left out and where to continue.",
        "properties": properties,
        "required": list(counts),
        "additionalProperties": False,
    }


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

_PATH_RELATIONS = {
    "type": "array",
    "items": _RELATION,
    "description": "For each hop, a relation linking its two names, in the relation's own direction",
}

NAVIGATION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_entity",
        title="Get Entity",
        description=(
            "Get one entity (type, observations, aliases) by its exact name or an alias, without its relations. "
            "Use it to check what the memory holds about one thing you can name; use describe_entity to see its "
            "relations too, and search_nodes when you do not know the name."
        ),
        input_schema=schemas.input_schema({"name": _NAME_IN}, ["name"]),
        output_schema={**_ENTITY, "$schema": schemas.DRAFT},
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
            {"names": {**_NAMES, "description": "The names (or aliases) of the entities to get"}}, ["names"]
        ),
        output_schema=schemas.output_schema(
            {
                "entities": {"type": "array", "items": {"anyOf": [_ENTITY, {"type": "null"}]}},
                "truncated": _cut(omittedEntities="names not answered", nextOffset="where to continue"),
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
                "name": _NAME_IN,
                "offset": _integer("How many of its relations to skip (default 0)", 0),
                "limit": _integer("How many of its relations to show at most", 1),
            },
            ["name"],
        ),
        output_schema=schemas.output_schema(
            {
                "entity": _ENTITY,
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
                "truncated": _cut(omittedRelations="relations not shown", nextOffset="the offset to ask next"),
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
                "from": _string("The exact name (or alias) of the entity the relations start from"),
                "to": _string("The exact name (or alias) of the entity the relations end at"),
                "relationType": _string("The exact relation type"),
                "offset": _integer("How many matching relations to skip (default 0)", 0),
                "limit": _integer("How many relations to return at most", 1, 1000),
            },
            [],
        ),
        output_schema=schemas.output_schema(
            {
                "relations": {"type": "array", "items": _RELATION},
                "total": {"type": "integer", "description": "How many relations match, across all pages"},
                "truncated": _cut(omittedRelations="matches not shown", nextOffset="the offset to ask next"),
            },
            ["relations", "total"],
        ),
        annotations=READ,
        arguments=_SearchRelationsArgs,
        run=search_relations,
    ),
    ToolSpec(
        name="get_neighbors",
        title="Get Neighbors",
        description=(
            "Get the entities within a few hops of one entity, following relations both ways (or only "
            "outgoing or incoming, or only one relationType), nearest first, each with its distance, and the "
            "relations followed. Use it to explore around something; use find_path to ask how two things connect."
        ),
        input_schema=schemas.input_schema(
            {
                "name": _NAME_IN,
                "depth": _integer("How many hops to go (default 1)", 1, MAX_NEIGHBOUR_DEPTH, 1),
                "direction": {
                    "type": "string",
                    "enum": ["both", "outgoing", "incoming"],
                    "default": "both",
                    "description": "outgoing: from the entity along relations it starts; incoming: the other way",
                },
                "relationType": _string("Follow only relations of this type"),
            },
            ["name"],
        ),
        output_schema=schemas.output_schema(
            {
                "entities": {
                    "type": "array",
                    "items": {
                        **_ENTITY,
                        "properties": {**_ENTITY["properties"], "distance": {"type": "integer"}},
                    },
                },
                "relations": {"type": "array", "items": _RELATION},
                "totalReached": {"type": "integer", "description": "How many names the traversal reached"},
                "unknownNames": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Names reached through relations that have no entity",
                },
                "truncated": schemas.TRUNCATED,
                "stoppedAt": _STOPPED_AT,
            },
            ["entities", "relations", "totalReached"],
        ),
        annotations=READ,
        arguments=_NeighboursArgs,
        run=get_neighbors,
    ),
)


def _path_tool(name: str, title: str, description: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        input_schema=schemas.input_schema(
            {
                "from": _NAME_IN,
                "to": _NAME_IN,
                "maxDepth": _integer("The longest path to look for, in hops (default 6)", 1, MAX_PATH_DEPTH, 6),
            },
            ["from", "to"],
        ),
        output_schema=schemas.output_schema(
            {
                "found": {"type": "boolean"},
                "path": {"type": "array", "items": {"type": "string"}, "description": "The names along the path"},
                "relations": _PATH_RELATIONS,
                "length": {"type": "integer", "description": "How many hops"},
                "stoppedAt": _STOPPED_AT,
            },
            ["found", "path", "relations", "length"],
        ),
        annotations=READ,
        arguments=_PathArgs,
        run=find_path,
    )


_FIND_PATH_TEXT = (
    "Find a shortest chain of relations between two entities, following relations both ways, and get the "
    "names along it with the relation behind each hop. Use it to answer how two things are connected; use "
    "find_all_paths for every route."
)

NAVIGATION_TOOLS += (
    _path_tool("find_path", "Find Path", _FIND_PATH_TEXT),
    _path_tool(
        "find_relation_path",
        "Find Relation Path",
        _FIND_PATH_TEXT + " The same tool as find_path, under the name some prompts use.",
    ),
    ToolSpec(
        name="find_all_paths",
        title="Find All Paths",
        description=(
            "Find the different chains of relations (no entity twice) between two entities, shortest first, "
            "following relations both ways, up to maxDepth hops and maxPaths paths. Use it to discover every way "
            "two things are connected (through work, family, a project); use find_path for just the shortest."
        ),
        input_schema=schemas.input_schema(
            {
                "from": _NAME_IN,
                "to": _NAME_IN,
                "maxDepth": _integer("The longest path, in hops (default 4)", 1, MAX_ALL_PATHS_DEPTH, 4),
                "maxPaths": _integer("How many paths to return at most (default 10)", 1, MAX_PATHS, 10),
            },
            ["from", "to"],
        ),
        output_schema=schemas.output_schema(
            {
                "paths": {
                    "type": "array",
                    "items": schemas.closed(
                        {
                            "type": "object",
                            "properties": {
                                "path": {"type": "array", "items": {"type": "string"}},
                                "relations": _PATH_RELATIONS,
                            },
                            "required": ["path", "relations"],
                        }
                    ),
                },
                "count": {"type": "integer"},
                "truncated": _cut(omittedPaths="paths found but not shown"),
                "stoppedAt": _STOPPED_AT,
            },
            ["paths", "count"],
        ),
        annotations=READ,
        arguments=_AllPathsArgs,
        run=find_all_paths,
    ),
    ToolSpec(
        name="extract_subgraph",
        title="Extract Subgraph",
        description=(
            "Get the part of the memory around some entities: every entity within depth hops of the names "
            "(relations followed both ways) and every relation among them. Use it to load the context of a "
            "topic in one call; get_context_info is the same at depth 1 with observations ordered for reading."
        ),
        input_schema=schemas.input_schema(
            {
                "names": {**_NAMES, "description": "The names (or aliases) to start from"},
                "depth": _integer("How many hops to go (default 1)", 0, MAX_NEIGHBOUR_DEPTH, 1),
            },
            ["names"],
        ),
        output_schema=schemas.output_schema(
            {
                "entities": {"type": "array", "items": _ENTITY},
                "relations": {"type": "array", "items": _RELATION},
                "notFound": {"type": "array", "items": {"type": "string"}},
                "truncated": schemas.TRUNCATED,
                "stoppedAt": _STOPPED_AT,
            },
            ["entities", "relations", "notFound"],
        ),
        annotations=READ,
        arguments=_SubgraphArgs,
        run=extract_subgraph,
    ),
)
