"""query_nodes: structured look-ups of entities by type, importance, time, thread and relations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphmem.core.limits import Limits
from graphmem.core.models import Entity
from graphmem.core.projects import project_name
from graphmem.domain import lookup
from graphmem.tools import schemas
from graphmem.tools.base import READ, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec, entity_wire
from graphmem.tools.budget import SMALLEST_ENTITY, fit_items, most_that_fit
from graphmem.tools.wire import answer

__all__ = ["QUERY_TOOLS"]


class _HasRelationArg(ToolArgs):
    relation_type: Omittable[str] = Field(default=None, alias="relationType")
    direction: Literal["in", "out", "any"] = "any"


class _QueryArgs(ToolArgs):
    # Ranges are checked by the domain, which words the error for the model.
    entity_type: Omittable[str | list[str]] = Field(default=None, alias="entityType")
    min_importance: Omittable[float] = Field(default=None, alias="minImportance")
    created_since: Omittable[str] = Field(default=None, alias="createdSince")
    created_until: Omittable[str] = Field(default=None, alias="createdUntil")
    updated_since: Omittable[str] = Field(default=None, alias="updatedSince")
    updated_until: Omittable[str] = Field(default=None, alias="updatedUntil")
    thread_id: Omittable[str] = Field(default=None, alias="threadId")
    has_relation: Omittable[_HasRelationArg] = Field(default=None, alias="hasRelation")
    sort: Omittable[Literal["name", "createdAt", "updatedAt", "importance"]] = None
    order: Omittable[Literal["asc", "desc"]] = None
    offset: int = 0
    limit: Omittable[int] = None

    def filters(self) -> lookup.NodeFilters:
        types = [self.entity_type] if isinstance(self.entity_type, str) else self.entity_type
        relation = self.has_relation
        return lookup.NodeFilters(
            entity_types=types,
            min_importance=self.min_importance,
            created_since=self.created_since,
            created_until=self.created_until,
            updated_since=self.updated_since,
            updated_until=self.updated_until,
            thread_id=self.thread_id,
            has_relation=relation is not None,
            relation_type=None if relation is None else relation.relation_type,
            direction="any" if relation is None else relation.direction,
            sort=self.sort,
            order=self.order,
        )


def _entity(entity: Entity) -> dict[str, Any]:
    """An entity as the richer tools show it, with the importance and thread it was looked up by."""
    wire = entity_wire(entity)
    importance, thread = lookup.importance_of(entity.extra), lookup.thread_of(entity.extra)
    if importance is not None:
        wire["importance"] = importance
    if thread is not None:
        wire["threadId"] = thread
    return wire


def query_nodes(ctx: ToolContext, args: _QueryArgs) -> ToolOutput:
    # Load no more entities than the budget could show, however many match.
    cap = most_that_fit(ctx.response_budget, SMALLEST_ENTITY)
    page = lookup.query_nodes(ctx.graph, args.filters(), args.offset, args.limit, load_at_most=cap)
    items = [_entity(entity) for entity in page.entities]
    if ctx.graph.scope.every and len({entity.project for entity in page.entities}) > 1:
        # Read across every project: each item says where it lives.
        for item, entity in zip(items, page.entities, strict=True):
            item["project"] = project_name(entity.project)
    shown = fit_items(items, ctx.response_budget)
    structured: dict[str, Any] = {"entities": items[:shown], "total": page.total}
    notes: list[str] = []
    asked_end = page.total if args.limit is None else min(page.total, args.offset + args.limit)
    if args.offset + shown < asked_end:
        next_offset = args.offset + shown
        structured["truncated"] = {"omittedEntities": asked_end - next_offset, "nextOffset": next_offset}
        notes.append(
            f"Showing {shown} of {asked_end - args.offset} matching entities to keep this answer within the "
            f"response budget of about {ctx.response_budget:,} tokens; ask again with offset {next_offset} "
            "for the next ones, or narrow the look-up."
        )
    return answer(structured, notes)


_LIMITS = Limits()
_TIME = {"type": "string", "description": "ISO 8601, e.g. 2026-01-20"}

QUERY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="query_nodes",
        title="Query Nodes",
        description=(
            "Look entities up by what they are, not what they say: type, minimum importance, created or "
            "updated time, thread, or a relation they have (all filters given must hold); sorted and paged."
        ),
        input_schema=schemas.arguments(
            {
                # An array only in the listing (one type per property, for the clients that need
                # it); a single type given as a plain string is still taken.
                "entityType": {"type": "array", "items": {"type": "string"}, "description": "any of these types"},
                "minImportance": {"type": "number", "minimum": 0, "maximum": 1},
                "createdSince": _TIME,
                "createdUntil": _TIME,
                "updatedSince": _TIME,
                "updatedUntil": _TIME,
                "threadId": {"type": "string"},
                "hasRelation": {
                    "type": "object",
                    "properties": {
                        "relationType": {"type": "string"},
                        "direction": {"type": "string", "enum": ["in", "out", "any"], "default": "any"},
                    },
                },
                "sort": {"type": "string", "enum": ["name", "createdAt", "updatedAt", "importance"]},
                "order": {"type": "string", "enum": ["asc", "desc"]},
                "offset": {"type": "integer", "minimum": 0, "maximum": _LIMITS.max_query_offset, "default": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": _LIMITS.max_page_size},
                **schemas.PROJECT_ARGUMENT,
                **schemas.AS_OF_ARGUMENT,
            }
        ),
        output_schema=schemas.shape({"entities": "array", "total": "integer"}, {"truncated": "object"}),
        annotations=READ,
        arguments=_QueryArgs,
        run=query_nodes,
        reusable=True,
    ),
)
