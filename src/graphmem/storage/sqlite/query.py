"""query_nodes in SQLite: an `EntityQuery` as SQL over the indexed columns of migration 0011.

Each filter is one condition on an indexed column (type, thread, importance, the two
instants) or an EXISTS over the relations' indexes by source and by target, so SQLite can
start from the most selective index. A sort on an extra key reads in two parts, the
entities that have the key through its index (no sort of every match), then those without
it in creation order: a page of the most important entities reads about a page of rows.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from graphmem.core.projects import Scope
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.sqlite.scoping import and_visible, visible

__all__ = ["query_rows"]

Row = tuple[int, str, str, str | None, str]
"""An entity row: id, name, entity type, extra (JSON text), project."""

# The column an extra key is sorted on (migration 0011).
_SORT_COLUMNS = {"createdAt": "e.created_utc", "updatedAt": "e.updated_utc", "importance": "e.importance_number"}

_SELECT = "SELECT e.id, e.name, e.entity_type, e.extra, e.project FROM entities AS e"


def _conditions(query: EntityQuery, scope: Scope) -> tuple[list[str], list[Any]]:
    conditions: list[str] = [] if scope.every else [visible(scope, "e.project")]
    parameters: list[Any] = []
    if query.entity_types:
        conditions.append("e.entity_type IN (SELECT value FROM json_each(?))")
        parameters.append(json.dumps(list(query.entity_types)))
    if query.min_importance is not None:
        conditions.append("e.importance_number >= ?")
        parameters.append(query.min_importance)
    for column, since, until in (
        ("e.created_utc", query.created_since, query.created_until),
        ("e.updated_utc", query.updated_since, query.updated_until),
    ):
        if since is not None:
            conditions.append(f"{column} >= ?")
            parameters.append(since)
        if until is not None:
            conditions.append(f"{column} < ?")
            parameters.append(until)
    if query.thread_id is not None:
        # 0005's column holds a JSON number as one too, and TEXT affinity makes 7 equal '7'.
        conditions.append("e.thread_id = ? AND json_type(e.extra, '$.threadId') = 'text'")
        parameters.append(query.thread_id)
    if query.has_relation:
        # The unary + keeps SQLite on the index of the entity's end (a few rows per entity):
        # through relations_by_type instead it read every relation of the type per entity
        # (3.2 s for a look-up at 40,000 entities and 120,000 relations).
        typed = "" if query.relation_type is None else " AND +r.relation_type = ?"
        ends = {"out": ["from_name"], "in": ["to_name"], "any": ["from_name", "to_name"]}[query.direction]
        seen = and_visible(scope, "r.project")
        exists = [f"EXISTS (SELECT 1 FROM relations AS r WHERE r.{end} = e.name{typed}{seen})" for end in ends]
        conditions.append("(" + " OR ".join(exists) + ")")
        if query.relation_type is not None:
            parameters.extend([query.relation_type] * len(ends))
    return conditions, parameters


def _where(conditions: list[str]) -> str:
    return " WHERE " + " AND ".join(conditions) if conditions else ""


def _page(
    conn: sqlite3.Connection, conditions: list[str], parameters: list[Any], order: str, offset: int, limit: int
) -> list[Row]:
    rows: list[Row] = conn.execute(
        f"{_SELECT}{_where(conditions)} ORDER BY {order} LIMIT ? OFFSET ?", (*parameters, limit, offset)
    ).fetchall()
    return rows


def _count(conn: sqlite3.Connection, conditions: list[str], parameters: list[Any]) -> int:
    if not conditions:
        # Kept by triggers (migration 0007): count(*) would read a whole index.
        (total,) = conn.execute("SELECT count FROM row_counts WHERE name = 'entities'").fetchone()
    else:
        (total,) = conn.execute(f"SELECT count(*) FROM entities AS e{_where(conditions)}", parameters).fetchone()
    return int(total)


def query_rows(conn: sqlite3.Connection, query: EntityQuery, scope: Scope) -> tuple[list[Row], int]:
    """The rows of one page of the entities matching `query` among those `scope` sees, in its
    order, and how many match."""
    conditions, parameters = _conditions(query, scope)
    limit = -1 if query.limit is None else query.limit
    direction = " DESC" if query.descending else ""
    total = _count(conn, conditions, parameters)
    if query.sort in ("creation", "name"):
        # A name is unique within a project: only two projects' entities can tie, by creation then.
        order = f"e.id{direction}" if query.sort == "creation" else f"e.name{direction}, e.id{direction}"
        return _page(conn, conditions, parameters, order, query.offset, limit), total
    column = _SORT_COLUMNS[query.sort]
    # The entities without the key are counted, not those with it: IS NULL is a look-up in
    # the column's index, while SQLite reads IS NOT NULL (most rows) by computing the column
    # for every row (220 ms at 40,000 entities, against 0.1).
    keyed = total - _count(conn, [*conditions, f"{column} IS NULL"], parameters)
    rows: list[Row] = []
    if query.offset < keyed and limit != 0:
        # Ties in creation order, reversed with the sort: the index on the column ends with the id.
        order = f"{column}{direction}, e.id{direction}"
        rows = _page(conn, [*conditions, f"{column} IS NOT NULL"], parameters, order, query.offset, limit)
    wanted = None if query.limit is None else query.limit - len(rows)
    if wanted is None or wanted > 0:
        rows += _page(
            conn,
            [*conditions, f"{column} IS NULL"],
            parameters,
            f"e.id{direction}",
            max(0, query.offset - keyed),
            -1 if wanted is None else wanted,
        )
    return rows, total
