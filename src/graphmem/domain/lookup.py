"""Structured look-ups of entities (query_nodes): filters on type, importance, times, thread
and relations, without a query language (spec 001 keeps `query_nodes` and rules a query
language out). Here the arguments are checked and turned into one store query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage.entity_query import Direction, EntityQuery, Sort, importance_of, instant, thread_of

# The metadata the look-ups filter on, read as the tools show it (the one reading, in storage).
__all__ = ["NodeFilters", "QueryPage", "importance_of", "query_nodes", "thread_of"]


@dataclass(frozen=True, slots=True)
class NodeFilters:
    """What a look-up asks for, as the tool received it (times as given, not yet parsed).

    Attributes:
        entity_types: any of these exact types; None for every type.
        has_relation: the entity must be an end of a relation (of `relation_type` when given)
            in `direction`: `out` (its source), `in` (its target) or `any`.
        sort: None for creation order. order: `asc` or `desc`; None for the sort's natural
            order (ascending for creation order and names, newest or highest first otherwise).
    """

    entity_types: Sequence[str] | None = None
    min_importance: float | None = None
    created_since: str | None = None
    created_until: str | None = None
    updated_since: str | None = None
    updated_until: str | None = None
    thread_id: str | None = None
    has_relation: bool = False
    relation_type: str | None = None
    direction: Direction = "any"
    sort: Sort | None = None
    order: str | None = None


@dataclass(frozen=True, slots=True)
class QueryPage:
    """One page of a look-up: its entities in order, where it starts, how many match in all."""

    entities: tuple[Entity, ...]
    offset: int
    total: int


def _time(field: str, value: str | None) -> str | None:
    if value is None:
        return None
    parsed = instant(value)
    if parsed is None:
        raise InvalidInputError(
            field,
            f"is {value[:60]!r}, which is not an ISO 8601 time; give one such as 2026-01-20, "
            "2026-01-20T15:30:00Z or 2026-01-20T17:30:00+02:00.",
        )
    return parsed


def _range(field: str, since: str | None, until: str | None) -> tuple[str | None, str | None]:
    start, end = _time(f"{field}Since", since), _time(f"{field}Until", until)
    if start is not None and end is not None and start >= end:
        raise InvalidInputError(
            f"{field}Until",
            f"is not later than {field}Since, so nothing could match; {field}Since is inclusive and "
            f"{field}Until exclusive: give an end after the start.",
        )
    return start, end


def _check(graph: KnowledgeGraph, filters: NodeFilters, offset: int, limit: int | None) -> None:
    limits = graph.limits
    if filters.entity_types is not None:
        if not filters.entity_types:
            raise InvalidInputError("entityType", "is an empty list; give a type, a list of types, or leave it out.")
        graph.check_names("entityType", filters.entity_types)
    for field, value in (("threadId", filters.thread_id), ("hasRelation.relationType", filters.relation_type)):
        if value is not None:
            graph.check_names(field, [value])
    if filters.min_importance is not None and not 0 <= filters.min_importance <= 1:
        raise InvalidInputError("minImportance", f"is {filters.min_importance}; give a number from 0 to 1.")
    if limit is not None and not 1 <= limit <= limits.max_page_size:
        raise InvalidInputError(
            "limit", f"is {limit}; give a number from 1 to {limits.max_page_size:,}, or leave it out."
        )
    if not 0 <= offset <= limits.max_query_offset:
        raise InvalidInputError(
            "offset",
            f"is {offset}; give a number from 0 to {limits.max_query_offset:,}. To reach further, narrow the "
            "look-up (a type, a time range) or sort the other way.",
        )


def query_nodes(
    graph: KnowledgeGraph,
    filters: NodeFilters,
    offset: int = 0,
    limit: int | None = None,
    load_at_most: int | None = None,
) -> QueryPage:
    """The entities matching every filter, in the order asked, one page of them.

    Args:
        limit: at most this many entities; all that match when None.
        load_at_most: load no more than this many of the page (what the caller can show);
            `total` still counts every match.

    Raises:
        InvalidInputError: an argument is malformed or out of range (nothing is read).
    """
    _check(graph, filters, offset, limit)
    created = _range("created", filters.created_since, filters.created_until)
    updated = _range("updated", filters.updated_since, filters.updated_until)
    sort = filters.sort or "creation"
    order = filters.order or ("asc" if sort in ("creation", "name") else "desc")
    load = limit if load_at_most is None else min(limit or load_at_most, load_at_most)
    query = EntityQuery(
        entity_types=tuple(dict.fromkeys(filters.entity_types or ())),
        min_importance=filters.min_importance,
        created_since=created[0],
        created_until=created[1],
        updated_since=updated[0],
        updated_until=updated[1],
        thread_id=filters.thread_id,
        has_relation=filters.has_relation,
        relation_type=filters.relation_type,
        direction=filters.direction,
        sort=sort,
        descending=order == "desc",
        offset=offset,
        limit=load,
    )
    with graph.reading():
        entities, total = graph.store.query_entities(query)
    return QueryPage(tuple(entities), offset, total)
