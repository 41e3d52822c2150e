"""PostgresStore's navigation reads: query_nodes' filters and sorts, type counts, relations by
field, and the analytics and most-connected rows of the explorer, each within the scope.

Degrees are counted afresh from `relations` (PostgreSQL keeps no table of them: see
docs/performance.md, "The explorer"), among the relations the scope sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.storage.base import AnalyticsRows, EntitySummary
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.postgres.reads import ENTITY_ROW, _Reads, _texts
from graphmem.storage.postgres.scoping import visible
from graphmem.storage.postgres.text import escape, unescape


def _summary(row: Sequence[Any]) -> EntitySummary:
    name, entity_type, created_at, updated_at, version, importance, observations, degree = row
    return EntitySummary(
        unescape(name),
        unescape(entity_type),
        None if created_at is None else unescape(created_at),
        None if updated_at is None else unescape(updated_at),
        None if version is None else int(version),
        None if importance is None else float(importance),
        int(observations),
        int(degree),
    )


def _degrees(scope: Scope) -> str:
    """A `WITH deg (name, degree)` of every name the scope's relations use (a self-relation counts once)."""
    seen = visible(scope, "project")
    return (
        "WITH deg AS (SELECT name, count(*) AS degree FROM ("
        f" SELECT from_name AS name FROM relations WHERE {seen} UNION ALL"
        f" SELECT to_name FROM relations WHERE to_name <> from_name AND {seen}) AS ends GROUP BY name)"
    )


def _summaries(scope: Scope) -> str:
    """The summary of each entity the scope sees, ready for more ` AND ...` (after `_degrees`)."""
    return (
        "SELECT e.name, e.entity_type, e.created_at, e.updated_at, e.version, e.importance,"
        " (SELECT count(*) FROM observations AS o WHERE o.entity_id = e.id), coalesce(d.degree, 0)"
        f" FROM entities AS e LEFT JOIN deg AS d ON d.name = e.name WHERE {visible(scope, 'e.project')}"
    )


class _Navigation(_Reads):
    """The navigation reads of `PostgresStore`."""

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        conditions: list[str] = [visible(self._scope, "e.project")]
        params: dict[str, Any] = {}
        if query.entity_types:
            conditions.append("e.entity_type = ANY(%(types)s)")
            params["types"] = _texts(query.entity_types)
        if query.min_importance is not None:
            conditions.append("e.importance >= %(importance)s")
            params["importance"] = query.min_importance
        if query.thread_id is not None:
            conditions.append("e.thread_id = %(thread)s")
            params["thread"] = escape(query.thread_id)
        for column, key, operator, value in (
            ("created_instant", "created_since", ">=", query.created_since),
            ("created_instant", "created_until", "<", query.created_until),
            ("updated_instant", "updated_since", ">=", query.updated_since),
            ("updated_instant", "updated_until", "<", query.updated_until),
        ):
            if value is not None:
                conditions.append(f"e.{column} {operator} %({key})s")
                params[key] = value
        if query.has_relation:
            ends = {
                "out": "r.from_name = e.name",
                "in": "r.to_name = e.name",
                "any": "(r.from_name = e.name OR r.to_name = e.name)",
            }[query.direction]
            of_type = ""
            if query.relation_type is not None:
                of_type = " AND r.relation_type = %(relation_type)s"
                params["relation_type"] = escape(query.relation_type)
            conditions.append(f"EXISTS (SELECT 1 FROM relations AS r WHERE {ends}{of_type}{self._seen('r.project')})")
        where = " WHERE " + " AND ".join(conditions)
        ((total,),) = self._rows(f"SELECT count(*) FROM entities AS e{where}", params)
        sort_column: str | None = {
            "creation": None,
            "name": "e.name",
            "createdAt": "e.created_instant",
            "updatedAt": "e.updated_instant",
            "importance": "e.importance",
        }[query.sort]
        direction = "DESC" if query.descending else "ASC"
        order = f"e.id {direction}"
        if sort_column is not None:
            # Absent values last in either direction; ties in creation order (reversed too):
            # two projects' entities of one name tie on it.
            order = f"{sort_column} IS NULL, {sort_column} {direction}, {order}"
        params["limit"], params["offset"] = query.limit, query.offset
        columns = ", ".join(f"e.{column}" for column in ENTITY_ROW.split(", "))
        rows = self._rows(
            f"SELECT {columns} FROM entities AS e{where} ORDER BY {order} LIMIT %(limit)s OFFSET %(offset)s", params
        )
        return self._entities_of(rows), int(total)

    def entity_type_counts(self) -> list[tuple[str, int]]:
        rows = self._rows(
            f"SELECT entity_type, count(*) AS n FROM entities WHERE {visible(self._scope, 'project')}"
            " GROUP BY entity_type ORDER BY n DESC, 1"
        )
        return [(unescape(entity_type), int(count)) for entity_type, count in rows]

    def relation_type_counts(self) -> list[tuple[str, int]]:
        rows = self._rows(
            f"SELECT relation_type, count(*) AS n FROM relations WHERE {visible(self._scope, 'project')}"
            " GROUP BY relation_type ORDER BY n DESC, 1"
        )
        return [(unescape(relation_type), int(count)) for relation_type, count in rows]

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        conditions = [visible(self._scope, "project")]
        params: list[Any] = []
        for column, value in (("from_name", from_), ("to_name", to), ("relation_type", relation_type)):
            if value is not None:
                conditions.append(f"{column} = %s")
                params.append(escape(value))
        where = " WHERE " + " AND ".join(conditions)
        ((total,),) = self._rows(f"SELECT count(*) FROM relations{where}", params)
        rows = self._rows(
            f"SELECT from_name, to_name, relation_type, extra, project FROM relations{where}"
            " ORDER BY id LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        return self._relations_of(rows), int(total)

    def most_connected(self, entity_type: str | None, offset: int, limit: int) -> list[EntitySummary]:
        of_type = "" if entity_type is None else " AND e.entity_type = %(type)s"
        params = {"type": None if entity_type is None else escape(entity_type), "offset": offset, "limit": limit}
        rows = self._rows(
            f"{_degrees(self._scope)} {_summaries(self._scope)}{of_type}"
            ' ORDER BY coalesce(d.degree, 0) DESC, e.name COLLATE "C" DESC LIMIT %(limit)s OFFSET %(offset)s',
            params,
        )
        return [_summary(row) for row in rows]

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        of_thread = "" if thread_id is None else " AND e.thread_id = %(thread)s"
        params: dict[str, Any] = {"thread": None if thread_id is None else escape(thread_id), "limit": limit}
        degrees, seen = _degrees(self._scope), visible(self._scope, "e.project")

        def summaries(where: str, order: str) -> list[EntitySummary]:
            rows = self._rows(
                f"{degrees} {_summaries(self._scope)}{where}{of_thread} ORDER BY {order} LIMIT %(limit)s", params
            )
            return [_summary(row) for row in rows]

        recent = summaries("", "e.updated_at DESC NULLS LAST, e.id DESC")
        important = summaries("", "e.importance DESC NULLS LAST, e.id DESC")
        connected = summaries(" AND d.degree > 0", "d.degree DESC, e.name DESC")
        unconnected = summaries(" AND d.degree IS NULL", "e.id")
        ((unconnected_total,),) = self._rows(
            f"{degrees} SELECT count(*) FROM entities AS e LEFT JOIN deg AS d ON d.name = e.name"
            f" WHERE d.degree IS NULL AND {seen}{of_thread}",
            params,
        )
        # Names the scope's relations use that no entity it sees has.
        missing = f"NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.name = d.name AND {seen})"
        dangling = self._rows(
            f"{degrees} SELECT d.name, count(*) OVER () FROM deg AS d WHERE {missing} ORDER BY d.name LIMIT %(limit)s",
            params,
        )
        dangling_total = int(dangling[0][1]) if dangling else 0
        if not dangling and limit == 0:
            ((dangling_total,),) = self._rows(f"{degrees} SELECT count(*) FROM deg AS d WHERE {missing}")
        return AnalyticsRows(
            recent,
            important,
            connected,
            unconnected,
            int(unconnected_total),
            [unescape(name) for name, _ in dangling],
            int(dangling_total),
        )
