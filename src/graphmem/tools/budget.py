"""Keeping read answers within what a client can take.

A read tool on a large memory could answer with megabytes of JSON, which a client
either rejects or pays for in context. Every graph-shaped answer goes through
`fit_graph`: when its text would exceed the response budget, the answer keeps the
longest run of entities that fits (never half an entity), the relations touching
them, and says how many entities were left out and how to get the rest.

Sizes are counted in characters of the pretty JSON text, at about four characters
per token, which is close for English and JSON and errs on the safe side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from graphmem.models import Graph

__all__ = ["CHARS_PER_TOKEN", "Fitted", "fit_graph", "truncation_note"]

CHARS_PER_TOKEN = 4

# The JSON text around the lists, `{"entities": [...], "relations": [...]}` pretty printed.
_FRAME = 40


@dataclass(frozen=True, slots=True)
class Fitted:
    """A graph cut to the budget, with what was left out."""

    graph: Graph
    total_entities: int
    omitted_entities: int

    @property
    def cut(self) -> bool:
        return self.omitted_entities > 0

    def truncation(self, next_offset: int) -> dict[str, Any]:
        """The `truncated` part of a structured answer."""
        return {"omittedEntities": self.omitted_entities, "nextOffset": next_offset}


def _text_size(wire: dict[str, Any]) -> int:
    # Inside the answer each object sits two levels deep: every line of it gets four
    # more spaces of indent, and a comma and newline separate it from the next.
    text = json.dumps(wire, indent=2, ensure_ascii=False)
    return len(text) + 4 * (text.count("\n") + 1) + 2


def fit_graph(graph: Graph, budget_tokens: int) -> Fitted:
    """The longest prefix of the graph's entities whose answer fits the budget.

    Relations are kept when they touch a kept entity. At least one entity is always
    kept, so a single huge entity is still readable. A budget of 0 keeps everything.
    """
    total = len(graph.entities)
    if budget_tokens <= 0:
        return Fitted(graph, total, 0)
    budget = budget_tokens * CHARS_PER_TOKEN - _FRAME
    touching: dict[str, list[int]] = {}
    for index, relation in enumerate(graph.relations):
        touching.setdefault(relation.from_, []).append(index)
        if relation.to != relation.from_:
            touching.setdefault(relation.to, []).append(index)
    # Walk the entities in order, paying for each one and for the relations it brings
    # in, until the next one would not fit. Only this prefix is ever measured, so a
    # huge graph costs no more than the budget's worth of work.
    kept_relations: set[int] = set()
    used = 0
    kept = 0
    for entity in graph.entities:
        brought = [index for index in touching.get(entity.name, ()) if index not in kept_relations]
        cost = _text_size(entity.to_wire()) + sum(_text_size(graph.relations[index].to_wire()) for index in brought)
        if kept and used + cost > budget:
            break
        used += cost
        kept += 1
        kept_relations.update(brought)
    if kept == total:
        # Everything fits (relations between entities that do not exist, which only a
        # whole-graph read holds, come along unmeasured).
        return Fitted(graph, total, 0)
    relations = tuple(graph.relations[index] for index in sorted(kept_relations))
    return Fitted(Graph(graph.entities[:kept], relations), total, total - kept)


def truncation_note(fitted: Fitted, budget_tokens: int, how_to_continue: str) -> str:
    """The text that tells the model the answer was cut and how to get the rest."""
    shown = fitted.total_entities - fitted.omitted_entities
    return (
        f"Showing {shown} of {fitted.total_entities} entities: the rest ({fitted.omitted_entities}) were left "
        f"out to keep this answer within the response budget of about {budget_tokens:,} tokens. "
        f"{how_to_continue}"
    )
