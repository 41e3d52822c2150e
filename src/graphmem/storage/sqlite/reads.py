"""SQLiteStore's reads: rows into entities and relations, pages, counts and analytics rows."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.storage.base import (
    AnalyticsRows,
    EntitySummary,
    StoreCounts,
)
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.sqlite import query as sqlite_query
from graphmem.storage.sqlite import ranking as sqlite_ranking
from graphmem.storage.sqlite.scoping import and_visible, visible
from graphmem.storage.sqlite.text import (
    key_item,
    keys_json,
    texts_in,
    texts_json,
)


def _extra(value: str | None) -> dict[str, Any] | None:
    return json.loads(value) if value else None


# The official read_graph answer, entities and relations in creation order (of the projects
# `{visible}` says the scope sees).
_OFFICIAL_ENTITIES = """
SELECT json_group_array(json_object('name', e.name, 'entityType', e.entity_type, 'observations', (
    SELECT json_group_array(o.content) FROM (
        SELECT content FROM observations WHERE entity_id = e.id ORDER BY id
    ) AS o
)))
FROM (SELECT id, name, entity_type FROM entities WHERE {visible} ORDER BY id) AS e
"""


_OFFICIAL_RELATIONS = """
SELECT json_group_array(json_object('from', from_name, 'to', to_name, 'relationType', relation_type))
FROM (SELECT from_name, to_name, relation_type FROM relations WHERE {visible} ORDER BY id)
"""


# An entity's summary for get_analytics: columns 1 to 8 of EntitySummary.
_SUMMARY = (
    "SELECT e.name, e.entity_type,"
    " CASE WHEN json_valid(e.extra) THEN json_extract(e.extra, '$.createdAt') END, e.updated_at,"
    " CASE WHEN json_valid(e.extra) THEN json_extract(e.extra, '$.version') END, e.importance,"
    " (SELECT count(*) FROM observations AS o WHERE o.entity_id = e.id),"
    " coalesce((SELECT d.degree FROM degrees AS d WHERE d.name = e.name), 0)"
    " FROM entities AS e"
)


_FEW_OF_A_TYPE = 2000
"""Up to this many entities of a type are sorted by degree outright (about 20 ms at most);
a commoner type is found by walking the degree index, where it turns up soon."""


def _sql_order(value: object) -> tuple[int, Any]:
    """A key that sorts values as SQLite orders them: NULL, then numbers, then text."""
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, value)
    return (2, str(value))


def _summary(row: tuple[Any, ...]) -> EntitySummary:
    name, entity_type, created_at, updated_at, version, importance, observations, degree = row
    return EntitySummary(
        name,
        entity_type,
        created_at if isinstance(created_at, str) else None,
        updated_at if isinstance(updated_at, str) else None,
        version if isinstance(version, int) else None,
        float(importance) if isinstance(importance, int | float) else None,
        observations,
        degree,
    )


@dataclass(frozen=True, slots=True)
class _OfficialGraph:
    """A small memory's whole graph in the official wire form, and when it was read."""

    state: tuple[int, int]
    """`SQLiteStore._state()`: the memory is unchanged while it is."""
    relation_writes: int
    """The relations' write count (migration 0010): they are unchanged while it is."""
    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]


class _Reads:
    """The reads of `SQLiteStore`; every one runs inside `read()` or `write()`."""

    # Set by SQLiteStore.__init__; declared here for the mixins that use them.
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _term_counts: sqlite_ranking.TermCounts
    _official: _OfficialGraph | None
    _writing: bool
    _writes: int
    _bulk: bool
    _depth: int
    _scope: Scope
    location: str

    def existing_names(self, names: Sequence[str]) -> set[str]:
        names_json = texts_json(names)
        rows = self._conn.execute(
            f"SELECT name FROM entities WHERE name IN ({texts_in(names_json)}){and_visible(self._scope, 'project')}",
            (names_json,),
        )
        return {name for (name,) in rows}

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        resolved = {name: name for name in self.existing_names(names)}
        others = [name for name in dict.fromkeys(names) if name not in resolved]
        if others:
            others_json = texts_json(others)
            rows = self._conn.execute(
                "SELECT a.alias, e.name FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id"
                f" WHERE a.alias IN ({texts_in(others_json)}){and_visible(self._scope, 'e.project')}"
                " ORDER BY a.entity_id DESC",
                (others_json,),
            )
            # Oldest entity last, so it wins.
            resolved.update(dict(rows.fetchall()))
        return resolved

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        names_json = texts_json(names)
        rows = self._conn.execute(
            f"SELECT id, name, entity_type, extra, project FROM entities WHERE name IN ({texts_in(names_json)})"
            f"{and_visible(self._scope, 'project')} ORDER BY id",
            (names_json,),
        ).fetchall()
        return self._entities_of(rows)

    def iter_entities(self) -> Iterator[Entity]:
        seen = visible(self._scope, "project")
        of_seen = "" if self._scope.every else f" WHERE entity_id IN (SELECT id FROM entities WHERE {seen})"
        observations = self._conn.execute(
            f"SELECT entity_id, content FROM observations{of_seen} ORDER BY entity_id, id"
        )
        pending = next(observations, None)
        for entity_id, name, entity_type, extra, project in self._conn.execute(
            f"SELECT id, name, entity_type, extra, project FROM entities WHERE {seen} ORDER BY id"
        ):
            contents = []
            # Both cursors walk in entity-id order, so this is a merge join in one pass.
            while pending is not None and pending[0] <= entity_id:
                if pending[0] == entity_id:
                    contents.append(pending[1])
                pending = next(observations, None)
            yield Entity(name, entity_type, tuple(contents), _extra(extra), project)

    def iter_relations(self) -> Iterator[Relation]:
        for from_, to, relation_type, extra, project in self._conn.execute(
            "SELECT from_name, to_name, relation_type, extra, project FROM relations"
            f" WHERE {visible(self._scope, 'project')} ORDER BY id"
        ):
            yield Relation(from_, to, relation_type, _extra(extra), project)

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        if not self._scope.every:
            return self._official_graph_of_projects(at_most)
        # An unchanged memory gives the same answer.
        state = self._state()
        answer = self._official
        if self._writing or answer is None or answer.state != state:
            if self._entity_count(None) > at_most:
                return None
            # SQLite writes the JSON in C; orjson reads it back faster than Python could build it.
            (entities_json,) = self._conn.execute(_OFFICIAL_ENTITIES.format(visible="1")).fetchone()
            (relation_writes,) = self._conn.execute(
                "SELECT count FROM write_counts WHERE name = 'relations'"
            ).fetchone()
            if answer is not None and answer.relation_writes == relation_writes:
                relations = answer.relations  # a write to entities only: the relations are those kept
            else:
                (relations_json,) = self._conn.execute(_OFFICIAL_RELATIONS.format(visible="1")).fetchone()
                relations = orjson.loads(relations_json)
            answer = _OfficialGraph(state, relation_writes, orjson.loads(entities_json), relations)
            # Inside a write the memory may still roll back: nothing read then is kept.
            self._official = None if self._writing else answer
        if len(answer.entities) > at_most:
            return None
        # New lists for the caller; the items are never changed by anyone.
        return {"entities": list(answer.entities), "relations": list(answer.relations)}

    def _official_graph_of_projects(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        """official_graph in a scope that sees some projects: read each time (not kept)."""
        if self._entity_count(None) > at_most:
            return None
        seen = visible(self._scope, "project")
        (entities_json,) = self._conn.execute(_OFFICIAL_ENTITIES.format(visible=seen)).fetchone()
        (relations_json,) = self._conn.execute(_OFFICIAL_RELATIONS.format(visible=seen)).fetchone()
        return {"entities": orjson.loads(entities_json), "relations": orjson.loads(relations_json)}

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        where = f" WHERE {visible(self._scope, 'project')}" + ("" if entity_type is None else " AND entity_type = ?1")
        parameters: tuple[object, ...] = () if entity_type is None else (entity_type,)
        total = self._entity_count(entity_type)
        start = self._dense_id(offset, total) if entity_type is None and offset and self._scope.every else None
        if start is not None:
            where, parameters, offset = " WHERE id >= ?1", (start,), 0
        rows = self._conn.execute(
            f"SELECT id, name, entity_type, extra, project FROM entities{where} ORDER BY id LIMIT ? OFFSET ?",
            (*parameters, -1 if limit is None else limit, offset),
        ).fetchall()
        return self._entities_of(rows), total

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        rows, total = sqlite_query.query_rows(self._conn, query, self._scope)
        return self._entities_of(rows), total

    def _entities_of(self, rows: Sequence[tuple[int, str, str, str | None, str]]) -> list[Entity]:
        """The entities of rows (id, name, type, extra, project), in the rows' order, with their observations."""
        observations: dict[int, list[str]] = {row[0]: [] for row in rows}
        if rows:
            for entity_id, content in self._conn.execute(
                "SELECT entity_id, content FROM observations"
                " WHERE entity_id IN (SELECT value FROM json_each(?)) ORDER BY entity_id, id",
                (json.dumps(list(observations)),),
            ):
                observations[entity_id].append(content)
        return [
            Entity(name, entity_type, tuple(observations[entity_id]), _extra(extra), project)
            for entity_id, name, entity_type, extra, project in rows
        ]

    def _dense_id(self, offset: int, total: int) -> int | None:
        """The id of the entity at `offset`, when the ids have no gaps; None when they have some.

        SQLite walks every row an OFFSET skips (15 ms for 900,000 entities); a memory that
        never lost an entity (an import, say) has ids first..last, and the entity at
        `offset` is simply first + offset.
        """
        # Two subqueries: SQLite answers min() or max() alone from the ends of the rowid
        # tree, but scans a whole index for both in one SELECT.
        first, last = self._conn.execute(
            "SELECT (SELECT min(id) FROM entities), (SELECT max(id) FROM entities)"
        ).fetchone()
        if first is None or last - first + 1 != total:
            return None
        return int(first) + offset

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        names_json = texts_json(names)
        rows = self._conn.execute(
            "SELECT from_name, to_name, relation_type, extra, project FROM relations WHERE id IN ("
            f" SELECT id FROM relations WHERE from_name IN ({texts_in(names_json, '?1')})"
            f" UNION SELECT id FROM relations WHERE to_name IN ({texts_in(names_json, '?1')})"
            f"){and_visible(self._scope, 'project')} ORDER BY id",
            (names_json,),
        )
        return [Relation(f, t, r, _extra(extra), project) for f, t, r, extra, project in rows]

    def relations_among(self, names: Sequence[str], limit: int) -> list[Relation]:
        names_json = texts_json(names)
        rows = self._conn.execute(
            "SELECT from_name, to_name, relation_type, extra, project FROM relations"
            f" WHERE from_name IN ({texts_in(names_json, '?1')}) AND to_name IN ({texts_in(names_json, '?1')})"
            f"{and_visible(self._scope, 'project')} ORDER BY id LIMIT ?2",
            (names_json, limit),
        )
        return [Relation(f, t, r, _extra(extra), project) for f, t, r, extra, project in rows]

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        names_json = texts_json(names)
        return self._conn.execute(
            "SELECT from_name, to_name, relation_type FROM relations WHERE id IN ("
            f" SELECT id FROM relations WHERE from_name IN ({texts_in(names_json, '?1')})"
            f" UNION SELECT id FROM relations WHERE to_name IN ({texts_in(names_json, '?1')})"
            f"){and_visible(self._scope, 'project')} ORDER BY id",
            (names_json,),
        ).fetchall()

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        found_keys = keys_json(keys)
        rows = self._conn.execute(
            "SELECT r.from_name, r.to_name, r.relation_type FROM json_each(?) AS k JOIN relations AS r"
            f" ON r.from_name = {key_item(found_keys, 0)} AND r.to_name = {key_item(found_keys, 1)}"
            f" AND r.relation_type = {key_item(found_keys, 2)}{and_visible(self._scope, 'r.project')}",
            (found_keys,),
        )
        return {(from_, to, relation_type) for from_, to, relation_type in rows}

    def observations_of(self, name: str) -> list[str] | None:
        row = self._conn.execute(
            f"SELECT id FROM entities WHERE name = ?{and_visible(self._scope, 'project')} ORDER BY id", (name,)
        ).fetchone()
        if row is None:
            return None
        rows = self._conn.execute("SELECT content FROM observations WHERE entity_id = ? ORDER BY id", row)
        return [content for (content,) in rows]

    def counts(self) -> StoreCounts:
        if not self._scope.every:
            seen = visible(self._scope, "project")
            entities, relations, observations = self._conn.execute(
                f"SELECT (SELECT count(*) FROM entities WHERE {seen}), (SELECT count(*) FROM relations WHERE {seen}),"
                f" (SELECT count(*) FROM observations WHERE entity_id IN (SELECT id FROM entities WHERE {seen}))"
            ).fetchone()
            return StoreCounts(entities, relations, observations)
        counts = dict(self._conn.execute("SELECT name, count FROM row_counts").fetchall())
        return StoreCounts(counts["entities"], counts["relations"], counts["observations"])

    def _entity_count(self, entity_type: str | None) -> int:
        """How many entities there are (of one type), from the counts the triggers keep."""
        if not self._scope.every:
            of_type = "" if entity_type is None else " AND entity_type = ?"
            (count,) = self._conn.execute(
                f"SELECT count(*) FROM entities WHERE {visible(self._scope, 'project')}{of_type}",
                () if entity_type is None else (entity_type,),
            ).fetchone()
            return int(count)
        if entity_type is None:
            row = self._conn.execute("SELECT count FROM row_counts WHERE name = 'entities'").fetchone()
        else:
            row = self._conn.execute(
                "SELECT count FROM entity_type_counts WHERE entity_type = ?", (entity_type,)
            ).fetchone()
        return 0 if row is None else int(row[0])

    def entity_type_counts(self) -> list[tuple[str, int]]:
        return self._type_counts("entities", "entity_type")

    def relation_type_counts(self) -> list[tuple[str, int]]:
        return self._type_counts("relations", "relation_type")

    def _type_counts(self, table: str, column: str) -> list[tuple[str, int]]:
        """Each type of `table`'s rows with how many have it, most first: from the counts the
        triggers keep (`<column>_counts`) across every project, counted in a project's scope."""
        counted = (
            f"{column}_counts"
            if self._scope.every
            else f"(SELECT {column}, count(*) AS count FROM {table}"
            f" WHERE {visible(self._scope, 'project')} GROUP BY {column})"
        )
        rows = self._conn.execute(f"SELECT {column}, count FROM {counted} ORDER BY count DESC, {column}")
        return [(kind, count) for kind, count in rows]

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        conditions = []
        parameters: list[object] = []
        for column, value in (("from_name", from_), ("to_name", to), ("relation_type", relation_type)):
            if value is not None:
                conditions.append(f"{column} = ?")
                parameters.append(value)
        if not self._scope.every:
            conditions.append(visible(self._scope, "project"))
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        (total,) = self._conn.execute(f"SELECT count(*) FROM relations{where}", parameters).fetchone()
        rows = self._conn.execute(
            "SELECT from_name, to_name, relation_type, extra, project FROM relations"
            f"{where} ORDER BY id LIMIT ? OFFSET ?",
            (*parameters, -1 if limit is None else limit, offset),
        )
        return [Relation(f, t, r, _extra(extra), project) for f, t, r, extra, project in rows], total

    def most_connected(self, entity_type: str | None, offset: int, limit: int) -> list[EntitySummary]:
        of_type = "" if entity_type is None else " AND e.entity_type = :type"
        params = {"type": entity_type, "offset": offset, "limit": limit}
        if not self._scope.every:
            rows = self._conn.execute(
                f"{self._scoped_summary()} AND 1{of_type} ORDER BY 8 DESC, e.name DESC LIMIT :limit OFFSET :offset",
                params,
            )
            return [_summary(row) for row in rows]
        if entity_type is not None and self._type_count(entity_type) <= _FEW_OF_A_TYPE:
            # Few entities have the type: sorting them all is cheaper than walking the degrees.
            rows = self._conn.execute(
                f"{_SUMMARY} WHERE 1{of_type} ORDER BY 8 DESC, e.name DESC LIMIT :limit OFFSET :offset", params
            )
            return [_summary(row) for row in rows]
        # Walk the degree index from the top (it holds the name too, so ties come by name);
        # CROSS JOIN keeps SQLite from scanning the entities instead.
        walk = (
            _SUMMARY.replace("FROM entities AS e", "FROM degrees AS top CROSS JOIN entities AS e")
            + f" WHERE e.name = top.name{of_type}"
        )
        connected = [
            _summary(row)
            for row in self._conn.execute(
                f"{walk} ORDER BY top.degree DESC, top.name DESC LIMIT :limit OFFSET :offset", params
            )
        ]
        if len(connected) == limit:
            return connected
        # Past the connected entities: the rest of the page is those without relations.
        if connected or offset == 0:
            connected_total = offset + len(connected)
        else:
            (connected_total,) = self._conn.execute(
                f"SELECT count(*) FROM degrees AS top CROSS JOIN entities AS e WHERE e.name = top.name{of_type}",
                params,
            ).fetchone()
        params.update(offset=max(0, offset - connected_total), limit=limit - len(connected))
        rows = self._conn.execute(
            f"{_SUMMARY} WHERE NOT EXISTS (SELECT 1 FROM degrees AS d WHERE d.name = e.name){of_type}"
            " ORDER BY e.name DESC LIMIT :limit OFFSET :offset",
            params,
        )
        return connected + [_summary(row) for row in rows]

    def _type_count(self, entity_type: str) -> int:
        row = self._conn.execute(
            "SELECT count FROM entity_type_counts WHERE entity_type = ?", (entity_type,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _scoped_summary(self) -> str:
        """`_SUMMARY` over the entities the scope sees, each with its degree among the relations
        the scope sees (the `degrees` table counts every project's), ready for more ` AND ...`."""
        seen = visible(self._scope, "r.project")
        degree = (
            f"(SELECT count(*) FROM relations AS r WHERE r.from_name = e.name AND {seen})"
            f" + (SELECT count(*) FROM relations AS r WHERE r.to_name = e.name AND {seen})"
        )
        summary = _SUMMARY.replace("coalesce((SELECT d.degree FROM degrees AS d WHERE d.name = e.name), 0)", degree)
        return f"{summary} WHERE {visible(self._scope, 'e.project')}"

    def _analytics_in_projects(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        """analytics in a scope that sees some projects: every entity it sees read once and
        ordered here, in SQLite's order (NULL, then numbers, then text; ties newest first)."""
        of_thread = "" if thread_id is None else " AND e.thread_id = :thread"
        rows = self._conn.execute(
            self._scoped_summary().replace("SELECT e.name", "SELECT e.id, e.name", 1) + of_thread,
            {"thread": thread_id},
        ).fetchall()

        def ordered(column: int) -> list[EntitySummary]:
            ranked = sorted(rows, key=lambda row: (_sql_order(row[column]), row[0]), reverse=True)
            return [_summary(row[1:]) for row in ranked[:limit]]

        connected = sorted((row for row in rows if row[8] > 0), key=lambda row: (row[8], row[1]), reverse=True)
        lonely = [row for row in rows if row[8] == 0]
        seen = visible(self._scope, "project")
        names = f"SELECT from_name AS name FROM relations WHERE {seen} UNION SELECT to_name FROM relations WHERE {seen}"
        dangling = [
            name
            for (name,) in self._conn.execute(
                f"SELECT name FROM ({names}) AS d WHERE NOT EXISTS"
                f" (SELECT 1 FROM entities AS e WHERE e.name = d.name AND {visible(self._scope, 'e.project')})"
                " ORDER BY name"
            )
        ]
        return AnalyticsRows(
            ordered(4),
            ordered(6),
            [_summary(row[1:]) for row in connected[:limit]],
            [_summary(row[1:]) for row in lonely[:limit]],
            len(lonely),
            dangling[:limit],
            len(dangling),
        )

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        if not self._scope.every:
            return self._analytics_in_projects(thread_id, limit)
        of_thread = "" if thread_id is None else " AND e.thread_id = :thread"
        params = {"thread": thread_id, "limit": limit}

        def summaries(where: str, order: str) -> list[EntitySummary]:
            rows = self._conn.execute(f"{_SUMMARY} WHERE 1{where}{of_thread} ORDER BY {order} LIMIT :limit", params)
            return [_summary(row) for row in rows]

        # Each order is an index walked backwards (ties: the newer entity, or the later name, first).
        recent = summaries("", "e.updated_at DESC, e.id DESC")
        important = summaries("", "e.importance DESC, e.id DESC")
        if thread_id is None:
            # Walk the degree index from the top; CROSS JOIN keeps SQLite from scanning entities.
            connected = [
                _summary(row)
                for row in self._conn.execute(
                    _SUMMARY.replace("FROM entities AS e", "FROM degrees AS top CROSS JOIN entities AS e")
                    + " WHERE e.name = top.name ORDER BY top.degree DESC, top.name DESC LIMIT :limit",
                    params,
                )
            ]
        else:
            connected = summaries(
                " AND EXISTS (SELECT 1 FROM degrees AS d WHERE d.name = e.name)", "8 DESC, e.name DESC"
            )
        # Few entities lack relations in a healthy memory: one scan finds them all and counts them.
        lonely = [
            entity_id
            for (entity_id,) in self._conn.execute(
                "SELECT e.id FROM entities AS e WHERE NOT EXISTS (SELECT 1 FROM degrees AS d WHERE d.name = e.name)"
                f"{of_thread} ORDER BY e.id",
                params,
            )
        ]
        unconnected = [
            _summary(row)
            for row in self._conn.execute(
                f"{_SUMMARY} WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id",
                (json.dumps(lonely[:limit]),),
            )
        ]
        dangling = [
            name
            for (name,) in self._conn.execute(
                "SELECT d.name FROM degrees AS d WHERE NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.name = d.name)"
                " ORDER BY d.name"
            )
        ]
        return AnalyticsRows(recent, important, connected, unconnected, len(lonely), dangling[:limit], len(dangling))

    def version(self) -> tuple[int, int] | None:
        with self._lock:
            if self._depth:
                return None
            return self._state()

    def _state(self) -> tuple[int, int]:
        # data_version moves when another connection commits, the write count when this one
        # does: an unchanged pair is an unchanged memory.
        (version,) = self._conn.execute("PRAGMA data_version").fetchone()
        return (version, self._writes)
