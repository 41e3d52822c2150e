"""PostgresStore's reads: rows into entities and relations, pages, counts and analytics rows.

Every text goes in through `text.escape` and comes out through `text.unescape`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from graphmem.core.models import Entity, Relation
from graphmem.storage.base import AnalyticsRows, EntitySummary, StoreCounts
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.postgres.text import escape, extra_of, unescape

MEMORY_LOCK = 0x67726170686D6531
"""The advisory lock key of the whole memory (every write holds it, shared or exclusive)."""

MAX_KEY_LOCKS = 256
"""Past this many names and relation keys, a write locks the whole memory instead."""

_PAGE = 2000
"""Rows per round trip when a read walks a whole table."""


@dataclass
class Delta:
    """What a write transaction added to the kept counts (graphmem_state), applied at its end."""

    entities: int = 0
    observations: int = 0
    relations: int = 0
    words: int = 0


@dataclass
class Transaction:
    """One thread's open transaction: its connection and what the write did so far."""

    conn: psycopg.Connection[Any]
    writing: bool
    depth: int = 1
    bulk: bool = False
    delta: Delta = field(default_factory=Delta)
    stale: set[int] = field(default_factory=set)
    """Entities whose word documents the write must rebuild before it commits."""
    locked: set[int] = field(default_factory=set)
    """Advisory lock keys this transaction holds already."""
    version: int | None = None
    """A read's `graphmem_state.writes` as its snapshot sees it (None in a write)."""
    memory_lock: str | None = None
    """How this write holds the whole memory's advisory lock: `shared` (beside other writers,
    each name locked apart) or `exclusive` (alone: a batch too large to lock name by name)."""

    def __post_init__(self) -> None:
        self.cursor = self.conn.cursor()


def lock_key(kind: str, *parts: str) -> int:
    """A signed 64-bit advisory lock key for one entity name or relation key."""
    digest = hashlib.blake2b("\x00".join((kind, *parts)).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


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


def _texts(values: Iterable[str]) -> list[str]:
    return [escape(value) for value in dict.fromkeys(values)]


# The degree of every name relations use (a self-relation counts once).
_DEGREES = (
    "WITH deg AS (SELECT name, count(*) AS degree FROM ("
    " SELECT from_name AS name FROM relations UNION ALL"
    " SELECT to_name FROM relations WHERE to_name <> from_name) AS ends GROUP BY name)"
)

_SUMMARY = (
    "SELECT e.name, e.entity_type, e.created_at, e.updated_at, e.version, e.importance,"
    " (SELECT count(*) FROM observations AS o WHERE o.entity_id = e.id), coalesce(d.degree, 0)"
    " FROM entities AS e LEFT JOIN deg AS d ON d.name = e.name"
)


class _Reads:
    """The reads of `PostgresStore`; every one runs inside `read()` or `write()`."""

    _local: threading.local
    location: str

    @property
    def _tx(self) -> Transaction:
        tx: Transaction | None = getattr(self._local, "tx", None)
        if tx is None:
            raise RuntimeError("PostgresStore reads and writes happen inside read() or write().")
        return tx

    def _rows(self, query: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._tx.cursor
        cursor.execute(query, params)
        return cursor.fetchall()

    def _lock(self, keys: Iterable[int]) -> None:
        """Inside a write: hold these advisory locks until it ends, taken in sorted order.

        Every write locks the names (and relation keys) it reads or changes before it reads
        them, so two writers on the same entity take turns: the second sees the first's
        commit, and a read-modify-write never works on a stale copy.
        """
        tx = self._tx
        if not tx.writing or tx.memory_lock == "exclusive":
            return
        wanted = sorted(set(keys) - tx.locked)
        if not wanted:
            return
        if tx.bulk or len(tx.locked) + len(wanted) > MAX_KEY_LOCKS:
            # Each advisory lock takes a slot of the server's lock table (64 per connection
            # by default): an import locks the whole memory instead, as SQLite's writer does.
            tx.cursor.execute("SELECT pg_advisory_xact_lock(%s)", (MEMORY_LOCK,))
            tx.memory_lock = "exclusive"
            return
        if tx.memory_lock is None:
            tx.cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", (MEMORY_LOCK,))
            tx.memory_lock = "shared"
        # Scanned in array order, so taken in sorted order: two writers never wait on each
        # other's keys of one batch in opposite orders.
        tx.cursor.execute("SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%s::bigint[]) AS k", (wanted,))
        tx.locked.update(wanted)

    def _lock_names(self, names: Iterable[str]) -> None:
        self._lock(lock_key("e", name) for name in names)

    def existing_names(self, names: Sequence[str]) -> set[str]:
        self._lock_names(names)
        rows = self._rows("SELECT name FROM entities WHERE name = ANY(%s)", (_texts(names),))
        return {unescape(name) for (name,) in rows}

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        resolved = {name: name for name in self.existing_names(names)}
        others = [name for name in dict.fromkeys(names) if name not in resolved]
        if others:
            rows = self._rows(
                "SELECT a.alias, e.name FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id"
                " WHERE a.alias = ANY(%s) ORDER BY a.entity_id DESC",
                (_texts(others),),
            )
            # Oldest entity last, so it wins.
            found = {unescape(alias): unescape(name) for alias, name in rows}
            self._lock_names(found.values())
            resolved.update(found)
        return resolved

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        self._lock_names(names)
        # The observations in the same round trip: a point read is a few round trips in all.
        rows = self._rows(
            "SELECT e.name, e.entity_type, e.extra, (SELECT coalesce(array_agg(o.content ORDER BY o.id), '{}')"
            " FROM observations AS o WHERE o.entity_id = e.id) FROM entities AS e WHERE e.name = ANY(%s) ORDER BY e.id",
            (_texts(names),),
        )
        return [
            Entity(unescape(name), unescape(entity_type), tuple(map(unescape, contents)), extra_of(extra))
            for name, entity_type, extra, contents in rows
        ]

    def _entities_of(self, rows: Sequence[tuple[Any, ...]]) -> list[Entity]:
        """The entities of rows (id, name, type, extra), in the rows' order, with their observations."""
        observations: dict[int, list[str]] = {row[0]: [] for row in rows}
        if rows:
            for entity_id, content in self._rows(
                "SELECT entity_id, content FROM observations WHERE entity_id = ANY(%s) ORDER BY entity_id, id",
                (list(observations),),
            ):
                observations[entity_id].append(unescape(content))
        return [
            Entity(unescape(name), unescape(entity_type), tuple(observations[entity_id]), extra_of(extra))
            for entity_id, name, entity_type, extra in rows
        ]

    def iter_entities(self) -> Iterator[Entity]:
        last = 0
        while True:
            # Pages by id, not OFFSET: each page starts where the last ended, from the index.
            rows = self._rows(
                "SELECT id, name, entity_type, extra FROM entities WHERE id > %s ORDER BY id LIMIT %s", (last, _PAGE)
            )
            if not rows:
                return
            yield from self._entities_of(rows)
            last = rows[-1][0]

    def iter_relations(self) -> Iterator[Relation]:
        last = 0
        while True:
            rows = self._rows(
                "SELECT id, from_name, to_name, relation_type, extra FROM relations WHERE id > %s ORDER BY id LIMIT %s",
                (last, _PAGE),
            )
            if not rows:
                return
            for _, from_, to, relation_type, extra in rows:
                yield Relation(unescape(from_), unescape(to), unescape(relation_type), extra_of(extra))
            last = rows[-1][0]

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        if self.counts().entities > at_most:
            return None
        entities = [entity.to_wire() for entity in self.iter_entities()]
        if len(entities) > at_most:
            return None
        return {"entities": entities, "relations": [relation.to_wire() for relation in self.iter_relations()]}

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        if entity_type is None:
            total = self.counts().entities
            where, params = "", []
        else:
            where, params = " WHERE entity_type = %s", [escape(entity_type)]
            ((total,),) = self._rows(f"SELECT count(*) FROM entities{where}", params)
        rows = self._rows(
            f"SELECT id, name, entity_type, extra FROM entities{where} ORDER BY id LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        return self._entities_of(rows), int(total)

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        conditions: list[str] = []
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
            conditions.append(f"EXISTS (SELECT 1 FROM relations AS r WHERE {ends}{of_type})")
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
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
            # Absent values last in either direction; ties in creation order (reversed too).
            order = f"{sort_column} IS NULL, {sort_column} {direction}, {order}"
        params["limit"], params["offset"] = query.limit, query.offset
        rows = self._rows(
            f"SELECT e.id, e.name, e.entity_type, e.extra FROM entities AS e{where}"
            f" ORDER BY {order} LIMIT %(limit)s OFFSET %(offset)s",
            params,
        )
        return self._entities_of(rows), int(total)

    def _relations_of(self, rows: Iterable[tuple[Any, ...]]) -> list[Relation]:
        return [Relation(unescape(f), unescape(t), unescape(r), extra_of(extra)) for f, t, r, extra in rows]

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        texts = _texts(names)
        rows = self._rows(
            "SELECT from_name, to_name, relation_type, extra FROM relations"
            " WHERE from_name = ANY(%s) OR to_name = ANY(%s) ORDER BY id",
            (texts, texts),
        )
        return self._relations_of(rows)

    def relations_among(self, names: Sequence[str], limit: int) -> list[Relation]:
        texts = _texts(names)
        rows = self._rows(
            "SELECT from_name, to_name, relation_type, extra FROM relations"
            " WHERE from_name = ANY(%s) AND to_name = ANY(%s) ORDER BY id LIMIT %s",
            (texts, texts, limit),
        )
        return self._relations_of(rows)

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        return [relation.key for relation in self.relations_touching(names)]

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        self._lock(lock_key("r", *key) for key in keys)
        unique = list(dict.fromkeys(keys))
        rows = self._rows(
            "SELECT r.from_name, r.to_name, r.relation_type FROM relations AS r"
            " JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k (f, t, y)"
            " ON r.from_name = k.f AND r.to_name = k.t AND r.relation_type = k.y",
            (
                [escape(key[0]) for key in unique],
                [escape(key[1]) for key in unique],
                [escape(key[2]) for key in unique],
            ),
        )
        return {(unescape(f), unescape(t), unescape(r)) for f, t, r in rows}

    def observations_of(self, name: str) -> list[str] | None:
        self._lock_names([name])
        rows = self._rows("SELECT id FROM entities WHERE name = %s", (escape(name),))
        if not rows:
            return None
        contents = self._rows("SELECT content FROM observations WHERE entity_id = %s ORDER BY id", (rows[0][0],))
        return [unescape(content) for (content,) in contents]

    def counts(self) -> StoreCounts:
        ((entities, relations, observations),) = self._rows(
            "SELECT entities, relations, observations FROM graphmem_state WHERE id = 1"
        )
        delta = self._tx.delta
        return StoreCounts(
            int(entities) + delta.entities, int(relations) + delta.relations, int(observations) + delta.observations
        )

    def entity_type_counts(self) -> list[tuple[str, int]]:
        rows = self._rows("SELECT entity_type, count(*) AS n FROM entities GROUP BY entity_type ORDER BY n DESC, 1")
        return [(unescape(entity_type), int(count)) for entity_type, count in rows]

    def relation_type_counts(self) -> list[tuple[str, int]]:
        rows = self._rows(
            "SELECT relation_type, count(*) AS n FROM relations GROUP BY relation_type ORDER BY n DESC, 1"
        )
        return [(unescape(relation_type), int(count)) for relation_type, count in rows]

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        conditions = []
        params: list[Any] = []
        for column, value in (("from_name", from_), ("to_name", to), ("relation_type", relation_type)):
            if value is not None:
                conditions.append(f"{column} = %s")
                params.append(escape(value))
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        ((total,),) = self._rows(f"SELECT count(*) FROM relations{where}", params)
        rows = self._rows(
            f"SELECT from_name, to_name, relation_type, extra FROM relations{where} ORDER BY id LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        return self._relations_of(rows), int(total)

    def most_connected(self, entity_type: str | None, offset: int, limit: int) -> list[EntitySummary]:
        of_type = "" if entity_type is None else " WHERE e.entity_type = %(type)s"
        params = {"type": None if entity_type is None else escape(entity_type), "offset": offset, "limit": limit}
        # The degrees are counted afresh: PostgreSQL keeps no table of them (docs/performance.md, "The explorer").
        rows = self._rows(
            f'{_DEGREES} {_SUMMARY}{of_type} ORDER BY coalesce(d.degree, 0) DESC, e.name COLLATE "C" DESC'
            " LIMIT %(limit)s OFFSET %(offset)s",
            params,
        )
        return [_summary(row) for row in rows]

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        of_thread = "" if thread_id is None else " AND e.thread_id = %(thread)s"
        params: dict[str, Any] = {"thread": None if thread_id is None else escape(thread_id), "limit": limit}

        def summaries(where: str, order: str) -> list[EntitySummary]:
            rows = self._rows(
                f"{_DEGREES} {_SUMMARY} WHERE true{where}{of_thread} ORDER BY {order} LIMIT %(limit)s", params
            )
            return [_summary(row) for row in rows]

        recent = summaries("", "e.updated_at DESC NULLS LAST, e.id DESC")
        important = summaries("", "e.importance DESC NULLS LAST, e.id DESC")
        connected = summaries(" AND d.degree > 0", "d.degree DESC, e.name DESC")
        unconnected = summaries(" AND d.degree IS NULL", "e.id")
        ((unconnected_total,),) = self._rows(
            f"{_DEGREES} SELECT count(*) FROM entities AS e LEFT JOIN deg AS d ON d.name = e.name"
            f" WHERE d.degree IS NULL{of_thread}",
            params,
        )
        dangling = self._rows(
            f"{_DEGREES} SELECT d.name, count(*) OVER () FROM deg AS d"
            " WHERE NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.name = d.name) ORDER BY d.name LIMIT %(limit)s",
            params,
        )
        dangling_total = int(dangling[0][1]) if dangling else 0
        if not dangling and limit == 0:
            ((dangling_total,),) = self._rows(
                f"{_DEGREES} SELECT count(*) FROM deg AS d"
                " WHERE NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.name = d.name)"
            )
        return AnalyticsRows(
            recent,
            important,
            connected,
            unconnected,
            int(unconnected_total),
            [unescape(name) for name, _ in dangling],
            int(dangling_total),
        )
