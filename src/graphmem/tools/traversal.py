"""Traversal tools of spec 004: neighbours, shortest and all paths, subgraphs.

Each traversal is bounded, and its answer says in `stoppedAt` which bound stopped it
before it saw everything it could reach.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphmem.core.models import Graph
from graphmem.domain import traversal
from graphmem.domain.traversal import Bound
from graphmem.tools import schemas
from graphmem.tools.base import READ, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec
from graphmem.tools.budget import SMALLEST_ENTITY, most_that_fit
from graphmem.tools.wire import (
    NAME_IN,
    NAMES,
    answer,
    cut_list,
    fit_entities,
    integer_schema,
)

__all__ = ["TRAVERSAL_TOOLS"]

# The deepest each traversal may go: past these a graph of agent memories is everything.
MAX_NEIGHBOUR_DEPTH = 5
MAX_PATH_DEPTH = 12
MAX_ALL_PATHS_DEPTH = 8
MAX_PATHS = 1000


def _stopped(bound: Bound | None, structured: dict[str, Any], notes: list[str], advice: str) -> None:
    """Say in the answer which bound stopped a traversal, if one did."""
    if bound is None:
        return
    structured["stoppedAt"] = {"bound": bound.name, "limit": bound.limit}
    notes.append(f"The search stopped at {bound.name} = {bound.limit:,} before it had seen everything. {advice}")


# -- traversal -----------------------------------------------------------------------------------


class _NeighboursArgs(ToolArgs):
    name: str
    depth: int = Field(default=1, ge=1, le=MAX_NEIGHBOUR_DEPTH)
    direction: Literal["both", "outgoing", "incoming"] = "both"
    relation_type: Omittable[str] = Field(default=None, alias="relationType")


def get_neighbors(ctx: ToolContext, args: _NeighboursArgs) -> ToolOutput:
    found = traversal.neighbourhood(
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
    with ctx.graph.reading():
        entities = {entity.name: entity for entity in reversed(ctx.graph.store.get_entities(names))}
    ordered = tuple(entities[name] for name in names if name in entities)
    notes: list[str] = []
    wire = fit_entities(
        ctx,
        Graph(ordered, found.relations, ctx.graph.scope.every),
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
    return answer(structured, notes)


class _PathArgs(ToolArgs):
    from_: str = Field(alias="from")
    to: str
    max_depth: int = Field(default=6, alias="maxDepth", ge=1, le=MAX_PATH_DEPTH)


def find_path(ctx: ToolContext, args: _PathArgs) -> ToolOutput:
    found = traversal.shortest_path(ctx.graph, args.from_, args.to, args.max_depth, most_depth=MAX_PATH_DEPTH)
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
    return answer(structured, notes)


class _AllPathsArgs(ToolArgs):
    from_: str = Field(alias="from")
    to: str
    max_depth: int = Field(default=4, alias="maxDepth", ge=1, le=MAX_ALL_PATHS_DEPTH)
    max_paths: int = Field(default=10, alias="maxPaths", ge=1, le=MAX_PATHS)


def find_all_paths(ctx: ToolContext, args: _AllPathsArgs) -> ToolOutput:
    found = traversal.all_paths(
        ctx.graph, args.from_, args.to, args.max_depth, args.max_paths, most_depth=MAX_ALL_PATHS_DEPTH
    )
    paths = [
        {"path": list(names), "relations": [relation.to_wire() for relation in relations]}
        for names, relations in found.paths
    ]
    notes: list[str] = []
    shown, note = cut_list(ctx.response_budget, paths, "paths", "Ask with a smaller maxPaths or maxDepth.")
    structured: dict[str, Any] = {"paths": paths[:shown], "count": len(paths)}
    if note:
        structured["truncated"] = {"omittedPaths": len(paths) - shown}
        notes.append(note)
    _stopped(found.bound, structured, notes, "There may be more paths than these.")
    return answer(structured, notes)


class _SubgraphArgs(ToolArgs):
    names: list[str] = Field(min_length=1)
    depth: int = Field(default=1, ge=0, le=MAX_NEIGHBOUR_DEPTH)


def extract_subgraph(ctx: ToolContext, args: _SubgraphArgs) -> ToolOutput:
    found = traversal.subgraph(
        ctx.graph,
        args.names,
        args.depth,
        max_depth=MAX_NEIGHBOUR_DEPTH,
        load_at_most=most_that_fit(ctx.response_budget, SMALLEST_ENTITY),
    )
    notes: list[str] = []
    structured = fit_entities(
        ctx, found.graph, "Ask with fewer names or a smaller depth.", notes, unloaded=found.unloaded
    )
    structured["notFound"] = list(found.not_found)
    if found.not_found:
        notes.append(
            f"Not found: {', '.join(found.not_found)}. Names are exact and case-sensitive; "
            "use search_nodes to find the right name."
        )
    _stopped(found.bound, structured, notes, "Ask with fewer names or a smaller depth.")
    return answer(structured, notes)


_GRAPH = {"entities": "array", "relations": "array"}

TRAVERSAL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_neighbors",
        title="Get Neighbors",
        description=(
            "Get the entities within depth hops of one entity, nearest first with their distance, and the "
            "relations followed (both ways, or one direction or relationType). To explore around something."
        ),
        input_schema=schemas.arguments(
            {
                "name": NAME_IN,
                "depth": integer_schema("", 1, MAX_NEIGHBOUR_DEPTH, 1),
                "direction": {"type": "string", "enum": ["both", "outgoing", "incoming"], "default": "both"},
                "relationType": {"type": "string"},
            },
            ["name"],
        ),
        output_schema=schemas.shape(
            {**_GRAPH, "totalReached": "integer"},
            {"unknownNames": "array", "truncated": "object", "stoppedAt": "object"},
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
        input_schema=schemas.arguments(
            {"from": NAME_IN, "to": NAME_IN, "maxDepth": integer_schema("", 1, MAX_PATH_DEPTH, 6)},
            ["from", "to"],
        ),
        output_schema=schemas.shape(
            {"found": "boolean", "path": "array", "relations": "array", "length": "integer"}, {"stoppedAt": "object"}
        ),
        annotations=READ,
        arguments=_PathArgs,
        run=find_path,
    )


_FIND_PATH_TEXT = (
    "Find a shortest chain of relations between two entities (either direction), with the relation behind "
    "each hop. To answer how two things are connected."
)

TRAVERSAL_TOOLS += (
    _path_tool("find_path", "Find Path", _FIND_PATH_TEXT),
    _path_tool("find_relation_path", "Find Relation Path", _FIND_PATH_TEXT + " The same as find_path."),
    ToolSpec(
        name="find_all_paths",
        title="Find All Paths",
        description=(
            "Find the different chains of relations between two entities, shortest first, up to maxDepth hops "
            "and maxPaths paths. To see every way two things are connected."
        ),
        input_schema=schemas.arguments(
            {
                "from": NAME_IN,
                "to": NAME_IN,
                "maxDepth": integer_schema("", 1, MAX_ALL_PATHS_DEPTH, 4),
                "maxPaths": integer_schema("", 1, MAX_PATHS, 10),
            },
            ["from", "to"],
        ),
        output_schema=schemas.shape(
            {"paths": "array", "count": "integer"}, {"truncated": "object", "stoppedAt": "object"}
        ),
        annotations=READ,
        arguments=_AllPathsArgs,
        run=find_all_paths,
    ),
    ToolSpec(
        name="extract_subgraph",
        title="Extract Subgraph",
        description=(
            "Get every entity within depth hops of some names, and the relations among them. To load the "
            "context of a topic in one call."
        ),
        input_schema=schemas.arguments(
            {"names": NAMES, "depth": integer_schema("", 0, MAX_NEIGHBOUR_DEPTH, 1)},
            ["names"],
        ),
        output_schema=schemas.shape({**_GRAPH, "notFound": "array"}, {"truncated": "object", "stoppedAt": "object"}),
        annotations=READ,
        arguments=_SubgraphArgs,
        run=extract_subgraph,
    ),
)
