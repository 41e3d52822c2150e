"""Answer and schema pieces shared by the tools beyond the official nine.

Their answers are JSON objects shown as pretty JSON text, cut to the response budget at
an item boundary, with a `truncated` object saying what was left out; their schemas
describe names that may be aliases.
"""

from __future__ import annotations

from typing import Any

from graphmem.core.models import Entity, Graph
from graphmem.domain.alike import alike_facts
from graphmem.domain.observations import records_of
from graphmem.tools.base import ToolContext, ToolOutput, dump_json, entity_wire
from graphmem.tools.budget import CHARS_PER_TOKEN, cut_note, fit_graph, fit_items

__all__ = [
    "ENTITY_EXTRAS",
    "ENTITY_KEYS",
    "NAMES",
    "NAME_IN",
    "SMALLEST_RELATION",
    "answer",
    "entity_with_records",
    "cut_list",
    "fit_entities",
    "integer_schema",
    "room_after",
    "string_schema",
]


def answer(structured: dict[str, Any], notes: list[str]) -> ToolOutput:
    return ToolOutput(structured, dump_json(structured), tuple(notes))


def fit_entities(ctx: ToolContext, graph: Graph, how: str, notes: list[str], unloaded: int = 0) -> dict[str, Any]:
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


def cut_list(budget: int, items: list[dict[str, Any]], what: str, how: str) -> tuple[int, str | None]:
    """How many of `items` fit the budget, and the note to give when not all do."""
    shown = fit_items(items, budget)
    if shown == len(items):
        return shown, None
    omitted = len(items) - shown
    return shown, (
        f"Showing {shown} of {len(items)} {what}: the other {omitted} were left out to keep this answer within "
        f"the response budget of about {budget:,} tokens. {how}"
    )


def room_after(budget: int, item: dict[str, Any]) -> int:
    """The budget left for a list once `item` is in the answer (0 stays unlimited)."""
    if budget <= 0:
        return 0
    return max(1, budget - len(dump_json(item)) // CHARS_PER_TOKEN)


SMALLEST_RELATION = len(dump_json({"from": "", "to": "", "relationType": ""})) + 8


def string_schema(description: str = "") -> dict[str, Any]:
    """A string argument; a description only when it says more than the argument's name."""
    return {"type": "string", "description": description} if description else {"type": "string"}


def integer_schema(
    description: str, minimum: int, maximum: int | None = None, default: int | None = None
) -> dict[str, Any]:
    """An integer argument; a description only when it says more than the name and the default."""
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if description:
        schema["description"] = description
    if maximum is not None:
        schema["maximum"] = maximum
    if default is not None:
        schema["default"] = default
    return schema


NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1}
# An entity as `entity_wire` shows it, for `schemas.shape`: the keys it always has, and the others.
ENTITY_KEYS = {"name": "string", "entityType": "string", "observations": "array"}
ENTITY_EXTRAS = {
    "aliases": "array",
    "createdAt": "string",
    "updatedAt": "string",
    "version": "integer",
    "alikeFacts": "array",
}
# Said once per argument because it is what tells a model it may use an alias.
NAME_IN = string_schema("Exact name or alias")


def entity_with_records(entity: Entity) -> dict[str, Any]:
    """An entity with its current observations also as records: ids, versions, metadata.

    A record leaves out version 1 and a creation time its entity already shows, so that an
    observation never corrected costs little more than its id.
    """
    wire = entity_wire(entity)
    records = []
    for record in records_of(entity):
        item = record.to_wire()
        if item.get("version") == 1:
            del item["version"]
        if "createdAt" in item and item["createdAt"] == wire.get("createdAt"):
            del item["createdAt"]
        records.append(item)
    wire["observationRecords"] = records
    alike = alike_facts(records_of(entity))
    if alike:
        # Candidates for one attribute's values: the agent decides (supersedes, or an attribute).
        wire["alikeFacts"] = [{"startsWith": start, "ids": ids} for start, ids in alike]
    return wire
