"""export_graph (spec 004): the memory as one text, in a format other tools read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from graphmem.core.models import Entity, Graph, Relation
from graphmem.domain.diagrams import dot_chunks, graphml_chunks, mermaid_chunks
from graphmem.tools import schemas
from graphmem.tools.base import READ, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json
from graphmem.tools.budget import SMALLEST_ENTITY, cut_note, fit_graph, most_that_fit

__all__ = ["EXPORT_TOOLS"]

Format = Literal["json", "mermaid", "dot", "graphml"]


def _json_chunks(entities: Iterable[Entity], relations: Iterable[Relation]) -> Iterator[str]:
    yield dump_json(Graph(tuple(entities), tuple(relations)).to_wire())


_WRITERS: dict[str, Callable[[Iterable[Entity], Iterable[Relation]], Iterator[str]]] = {
    "json": _json_chunks,
    "mermaid": mermaid_chunks,
    "dot": dot_chunks,
    "graphml": graphml_chunks,
}


class _ExportArgs(ToolArgs):
    format: Format = "json"


def export_graph(ctx: ToolContext, args: _ExportArgs) -> ToolOutput:
    # Read no more entities than the budget could show, whatever the memory's size.
    cap = most_that_fit(ctx.response_budget, SMALLEST_ENTITY)
    page = ctx.graph.read_page(None, 0, None) if cap is None else ctx.graph.read_head(cap)
    fitted = fit_graph(page.graph, ctx.response_budget)
    graph = fitted.graph
    omitted = page.total_entities - len(graph.entities)
    if omitted > 0:
        # A cut diagram shows the relations among the entities it holds, not arrows to
        # nodes it left out.
        kept = {entity.name for entity in graph.entities}
        graph = Graph(
            graph.entities, tuple(r for r in graph.relations if r.from_ in kept and r.to in kept), graph.labelled
        )
    text = "".join(_WRITERS[args.format](graph.entities, graph.relations))
    structured: dict[str, Any] = {
        "format": args.format,
        "content": text,
        "entities": len(graph.entities),
        "relations": len(graph.relations),
    }
    notes: tuple[str, ...] = ()
    if omitted > 0:
        shown = len(graph.entities)
        structured["truncated"] = {"omittedEntities": omitted, "nextOffset": shown}
        how = (
            "For the whole memory, run `graphmem export --format "
            f"{args.format} -o FILE` on the command line; read_graph pages through it."
        )
        notes = (cut_note(shown, omitted, ctx.response_budget, how),)
    return ToolOutput(structured, text, notes)


EXPORT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="export_graph",
        title="Export Graph",
        description=(
            "Export the graph as one text: json, mermaid, dot (Graphviz) or graphml. To draw the memory or hand "
            "it to another tool; read_graph is for reading it."
        ),
        input_schema=schemas.arguments({"format": {"type": "string", "enum": list(_WRITERS), "default": "json"}}),
        output_schema=schemas.shape(
            {"format": "string", "content": "string", "entities": "integer", "relations": "integer"},
            {"truncated": "object"},
        ),
        annotations=READ,
        arguments=_ExportArgs,
        run=export_graph,
    ),
)
