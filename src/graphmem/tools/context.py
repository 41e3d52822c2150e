"""get_context_info (spec 003): what a model should know about a few named entities."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.domain.context import context_info
from graphmem.tools import schemas
from graphmem.tools.base import READ, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json, entity_wire
from graphmem.tools.budget import cut_note, fit_graph

__all__ = ["CONTEXT_TOOLS"]


class _ContextArgs(ToolArgs):
    entity_names: list[str] = Field(alias="entityNames", min_length=1)


def get_context_info(ctx: ToolContext, args: _ContextArgs) -> ToolOutput:
    info = context_info(ctx.graph, args.entity_names)
    fitted = fit_graph(info.graph, ctx.response_budget)
    wire: dict[str, Any] = fitted.graph.to_wire()
    wire["entities"] = [entity_wire(entity) for entity in fitted.graph.entities]
    wire["notFound"] = list(info.not_found)
    notes: list[str] = []
    if info.not_found:
        notes.append(
            f"Not found: {', '.join(info.not_found)}. Names are exact and case-sensitive; "
            "use search_nodes to find the right name."
        )
    if fitted.cut:
        shown = len(fitted.graph.entities)
        wire["truncated"] = fitted.truncation(shown)
        how = "Ask for fewer entities at a time, or use open_nodes for the neighbours you need."
        notes.append(cut_note(shown, fitted.omitted_entities, ctx.response_budget, how))
    return ToolOutput(wire, dump_json(wire), tuple(notes))


CONTEXT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_context_info",
        title="Get Context Info",
        description=(
            "Get named entities, the entities related to them and the relations among these, current facts "
            "first. At the start of a task about things you can name; search_nodes when you cannot."
        ),
        input_schema=schemas.arguments(
            {"entityNames": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, ["entityNames"]
        ),
        output_schema=schemas.shape(
            {"entities": "array", "relations": "array", "notFound": "array"}, {"truncated": "object"}
        ),
        annotations=READ,
        arguments=_ContextArgs,
        run=get_context_info,
    ),
)
