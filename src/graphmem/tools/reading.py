"""Reads sized to the response budget: how many entities to load, and the answer cut to fit.

A read tool on a large memory must not load thousands of entities to show a hundred.
These helpers load a first guess, measure, load more only when the budget was not
reached, and cut the answer at an entity boundary with a note on how to get the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.core.models import Graph, GraphPage
from graphmem.tools.base import ToolContext, ToolOutput, dump_json
from graphmem.tools.budget import (
    CHARS_PER_TOKEN,
    Fitted,
    cut_note,
    first_read_size,
    fit_graph,
    next_read_size,
)

__all__ = [
    "SMALL_MEMORY",
    "bounded_graph_output",
    "first_read",
    "fits",
    "graph_output",
    "head_that_fits",
    "output_if_it_fits",
    "ranked_that_fit",
]


def output_if_it_fits(ctx: ToolContext, wire: dict[str, Any]) -> ToolOutput | None:
    """The answer as it is, written once and measured, when its text is within the budget."""
    text = dump_json(wire)
    return ToolOutput(wire, text) if fits(ctx, text) else None


def graph_output(wire: dict[str, Any]) -> ToolOutput:
    """A graph answer as it is: its wire form and that form's text."""
    return ToolOutput(wire, dump_json(wire))


def fits(ctx: ToolContext, text: str) -> bool:
    """Whether an answer's text is within the response budget (0: no budget)."""
    return ctx.response_budget <= 0 or len(text) <= ctx.response_budget * CHARS_PER_TOKEN


def bounded_graph_output(
    ctx: ToolContext,
    graph: Graph,
    how_to_continue: str,
    *,
    offset: int = 0,
    requested: int | None = None,
    extra: dict[str, Any] | None = None,
    fitted: Fitted | None = None,
) -> ToolOutput:
    """A graph answer cut to the response budget, saying what was left out.

    Args:
        offset: where the answer starts among all matching entities (for `nextOffset`).
        requested: how many entities the call asked for, when the graph holds only the
            first of them (a read fetches no more than the budget could show).
        fitted: `fit_graph(graph, ctx.response_budget)`, when the caller has it already.
    """
    if fitted is None and (requested is None or requested <= len(graph.entities)):
        # The usual answer is far below the budget: write it once and measure the text,
        # rather than pricing every entity and relation first.
        wire = graph.to_wire()
        if extra:
            wire.update(extra)
        output = output_if_it_fits(ctx, wire)
        if output is not None:
            return output
    if fitted is None:
        fitted = fit_graph(graph, ctx.response_budget)
    wire = fitted.graph.to_wire()
    if extra:
        wire.update(extra)
    shown = len(fitted.graph.entities)
    omitted = (len(graph.entities) if requested is None else requested) - shown
    if omitted <= 0:
        return graph_output(wire)
    next_offset = offset + shown
    wire["truncated"] = {"omittedEntities": omitted, "nextOffset": next_offset}
    how = how_to_continue.format(next=next_offset)
    return ToolOutput(wire, dump_json(wire), (cut_note(shown, omitted, ctx.response_budget, how),))


# The first read of a plain read_graph: about what a budget of a few thousand tokens shows.
_FIRST_HEAD = 64
SMALL_MEMORY = 256


def first_read(ctx: ToolContext, at_most: int) -> int:
    """How many of `at_most` entities a first read loads.

    A small memory (the usual one) is read whole at once: two reads would cost more than
    reading a few more entities than the budget shows. A larger one is first read as far
    as its counts (kept by the store) suggest the budget reaches, with some to spare.
    """
    if at_most <= _FIRST_HEAD:
        return at_most
    counts = ctx.graph.counts()
    if counts.entities <= SMALL_MEMORY:
        return at_most
    guess = first_read_size(counts.entities, counts.relations, counts.observations, ctx.response_budget)
    return min(max(_FIRST_HEAD, guess), at_most)


def head_that_fits(ctx: ToolContext, cap: int) -> tuple[GraphPage, Fitted | None]:
    """The first entities of the graph, enough of them that the budget cuts the answer (or all),
    and the cut when it was measured.

    `cap` entities of the smallest size would fill the budget, but real ones are larger:
    a read of `cap` entities loads and measures several times what is shown. Reading a
    few, then as many as their size says will fill the budget, until the budget cuts
    inside them, gives the same answer (an entity's cost counts every relation touching
    it, in any read).
    """
    limit = first_read(ctx, cap)
    while True:
        page = ctx.graph.read_head(limit)
        if limit >= cap or len(page.graph.entities) < limit:
            return page, None
        fitted = fit_graph(page.graph, ctx.response_budget)
        if fitted.cut:
            return page, fitted
        limit = min(next_read_size(page.graph, limit, ctx.response_budget), cap)


def ranked_that_fit(ctx: ToolContext, names: Sequence[str]) -> tuple[Graph, Fitted | None]:
    """The ranked entities from the first, enough of them that the budget cuts the answer (or all),
    and the cut when it was measured.

    As `head_that_fits` does for read_graph: an entity costs the same in any prefix
    (its own text and every relation touching it), so loading a few, then as many as
    their size says will fill the budget, until it cuts inside them, gives the answer a
    load of all would.
    """
    if ctx.response_budget <= 0:
        return ctx.graph.load_ranked(names), None
    count = first_read(ctx, len(names))
    while True:
        graph = ctx.graph.load_ranked(names[:count])
        if count >= len(names):
            return graph, None
        fitted = fit_graph(graph, ctx.response_budget)
        if fitted.cut:
            return graph, fitted
        count = min(next_read_size(graph, count, ctx.response_budget), len(names))
