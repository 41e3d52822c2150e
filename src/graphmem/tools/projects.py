"""Project tools: which projects the memory holds, and moving entities between them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.core.projects import SHARED, project_name
from graphmem.domain import projects
from graphmem.tools import schemas
from graphmem.tools.base import READ, WRITE, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json, plural

__all__ = ["PROJECT_TOOLS"]


class _NoArgs(ToolArgs):
    pass


def list_projects(ctx: ToolContext, args: _NoArgs) -> ToolOutput:
    current = ctx.graph.scope.project
    listed: list[dict[str, Any]] = []
    for counts in projects.list_projects(ctx.graph):
        item: dict[str, Any] = {
            "name": project_name(counts.project),
            "entities": counts.entities,
            "relations": counts.relations,
            "observations": counts.observations,
        }
        if counts.project not in (SHARED, item["name"]):
            item["id"] = counts.project
        if counts.last_written is not None:
            item["lastWritten"] = counts.last_written
        if counts.project == current:
            item["current"] = True
        listed.append(item)
    return ToolOutput({"projects": listed}, dump_json(listed))


class _MoveArgs(ToolArgs):
    names: list[str] = Field(min_length=1)
    to: Omittable[str] = None


def move_entities(ctx: ToolContext, args: _MoveArgs) -> ToolOutput:
    target = projects.target_named(ctx.graph, args.to)
    moved = projects.move(ctx.graph, args.names, target)
    structured: dict[str, Any] = {"moved": list(moved.moved), "relations": moved.relations, "to": project_name(target)}
    summary = (
        f"Moved {len(moved.moved)} {plural(len(moved.moved), 'entity', 'entities')} to {project_name(target)}, "
        f"with {moved.relations} {plural(moved.relations, 'relation', 'relations')}."
    )
    if moved.missing:
        structured["notFound"] = list(moved.missing)
        summary += f" Not found here: {', '.join(moved.missing)}."
    return ToolOutput(structured, summary, (dump_json(structured),), changed=bool(moved.moved))


PROJECT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_projects",
        title="List Projects",
        description=(
            "The projects this memory holds (and the shared space every project sees), with what each holds "
            "and when it was last written; the current one is marked."
        ),
        input_schema=schemas.arguments({}),
        output_schema=schemas.shape({"projects": "array"}),
        annotations=READ,
        arguments=_NoArgs,
        run=list_projects,
    ),
    ToolSpec(
        name="move_entities",
        title="Move Entities",
        description=(
            "Move entities (with their facts and relations) to another project, or to the shared space every "
            'project sees ("shared"). For what was filed in the wrong place.'
        ),
        input_schema=schemas.arguments(
            {
                "names": {"type": "array", "items": {"type": "string"}},
                "to": {"type": "string", "description": 'a project, or "shared" (default: this one)'},
            },
            ["names"],
        ),
        output_schema=schemas.shape({"moved": "array", "relations": "integer", "to": "string"}, {"notFound": "array"}),
        annotations=WRITE,
        arguments=_MoveArgs,
        run=move_entities,
    ),
)
