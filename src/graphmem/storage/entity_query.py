"""A structured look-up of entities (query_nodes): its filters and order, and the answer worked
out in Python for a backend without indexes.

Spec 001 keeps an entity's `importance` (a number from 0 to 1) and `threadId` (the conversation
or project that saved it) beside spec 002's `createdAt` and `updatedAt`, all in the entity's
extra keys. A look-up compares times as instants: every time is read as ISO 8601 and written
as UTC to the millisecond (`2026-01-20T15:30:00.000Z`, what graphmem itself writes), so a time
with an offset or without milliseconds compares by the moment it names. A value that is not
such a time, or an importance that is not a number, counts as absent. SQLite reads the times
with its own date functions: the two backends agree on every time to the millisecond.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from graphmem.core.models import Entity, Relation

__all__ = ["Direction", "EntityQuery", "Sort", "answer_in_python", "importance_of", "instant", "thread_of"]

Sort = Literal["creation", "name", "createdAt", "updatedAt", "importance"]
Direction = Literal["in", "out", "any"]


@dataclass(frozen=True, slots=True)
class EntityQuery:
    """Which entities a look-up wants (every given filter must hold), in which order, which page.

    Attributes:
        entity_types: any of these exact types; every type when empty.
        min_importance: at least this `importance`; entities without one never match.
        created_since, updated_since: at or after this instant (see `instant`), inclusive.
        created_until, updated_until: before this instant, exclusive; entities without the
            time never match a filter on it.
        thread_id: exactly this `threadId`.
        has_relation: whether the entity must be an end of a relation (of `relation_type` when
            given), as its source (`out`), its target (`in`) or either (`any`).
        sort: `creation` (the order entities were created), `name`, or one of the extra keys;
            ties follow creation order, and entities without the key come last in either order.
        descending: the sort reversed (ties too: the later created first).
    """

    entity_types: tuple[str, ...] = ()
    min_importance: float | None = None
    created_since: str | None = None
    created_until: str | None = None
    updated_since: str | None = None
    updated_until: str | None = None
    thread_id: str | None = None
    has_relation: bool = False
    relation_type: str | None = None
    direction: Direction = "any"
    sort: Sort = "creation"
    descending: bool = False
    offset: int = 0
    limit: int | None = None


# The ISO 8601 forms SQLite's date functions read, so that both backends agree on which
# stored times count: a date, then optionally a time to the minute, second or fraction, then
# optionally Z or an offset.
_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
    r"(?:[Zz]|[+-]\d{2}:\d{2})?"
)


def instant(value: object) -> str | None:
    """A time as `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC, or None when it is not an ISO 8601 time.

    A time without Z or an offset is taken as UTC (as SQLite takes it); fractions past the
    millisecond are dropped.
    """
    if not isinstance(value, str) or _ISO.fullmatch(value) is None:
        return None
    text = value[:-1] + "+00:00" if value[-1:] in ("Z", "z") else value
    fraction = re.search(r"\.(\d+)", text)
    if fraction is not None:
        # Milliseconds are what an instant keeps (SQLite's %f shows no more).
        text = text[: fraction.start()] + "." + (fraction.group(1) + "000")[:3] + text[fraction.end() :]
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None  # a day or hour out of range, such as 2026-02-30
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    utc = parsed.astimezone(UTC)
    if not 1 <= utc.year <= 9999:
        return None
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def importance_of(extra: dict[str, Any] | None) -> float | None:
    """An entity's `importance`, when it is a number."""
    value = (extra or {}).get("importance")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def thread_of(extra: dict[str, Any] | None) -> str | None:
    """An entity's `threadId`, when it is a string."""
    value = (extra or {}).get("threadId")
    return value if isinstance(value, str) else None


def _sort_value(entity: Entity, sort: Sort) -> str | float | None:
    if sort == "name":
        return entity.name
    if sort == "importance":
        return importance_of(entity.extra)
    if sort == "createdAt":
        return instant((entity.extra or {}).get("createdAt"))
    return instant((entity.extra or {}).get("updatedAt"))


def _within(value: str | None, since: str | None, until: str | None) -> bool:
    if since is None and until is None:
        return True
    if value is None:
        return False
    return (since is None or value >= since) and (until is None or value < until)


def _matches(entity: Entity, query: EntityQuery, related: set[str] | None) -> bool:
    extra = entity.extra or {}
    if query.entity_types and entity.entity_type not in query.entity_types:
        return False
    if query.min_importance is not None:
        importance = importance_of(extra)
        if importance is None or importance < query.min_importance:
            return False
    if query.thread_id is not None and thread_of(extra) != query.thread_id:
        return False
    if related is not None and entity.name not in related:
        return False
    return _within(
        instant(extra.get("createdAt")) if query.created_since or query.created_until else None,
        query.created_since,
        query.created_until,
    ) and _within(
        instant(extra.get("updatedAt")) if query.updated_since or query.updated_until else None,
        query.updated_since,
        query.updated_until,
    )


def _related_names(relations: Iterable[Relation], query: EntityQuery) -> set[str]:
    names: set[str] = set()
    for relation in relations:
        if query.relation_type is not None and relation.relation_type != query.relation_type:
            continue
        if query.direction in ("out", "any"):
            names.add(relation.from_)
        if query.direction in ("in", "any"):
            names.add(relation.to)
    return names


def answer_in_python(
    entities: Iterable[Entity], relations: Iterable[Relation], query: EntityQuery
) -> tuple[list[Entity], int]:
    """One page of the entities matching `query` in its order, and how many match in all.

    Args:
        entities: every entity, in creation order.
        relations: every relation (read only when the query filters on relations).
    """
    related = _related_names(relations, query) if query.has_relation else None
    matching = [entity for entity in entities if _matches(entity, query, related)]
    if query.sort != "creation":
        # Positions keep creation order for ties; absent values go last in either direction.
        keyed = [(_sort_value(entity, query.sort), position, entity) for position, entity in enumerate(matching)]
        present = [item for item in keyed if item[0] is not None]
        absent = [item for item in keyed if item[0] is None]
        present.sort(key=lambda item: (item[0], item[1]), reverse=query.descending)
        if query.descending:
            absent.reverse()
        matching = [entity for _, _, entity in present + absent]
    elif query.descending:
        matching.reverse()
    end = None if query.limit is None else query.offset + query.limit
    return matching[query.offset : end], len(matching)
