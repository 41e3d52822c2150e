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
from graphmem.core.projects import EVERY, Scope
from graphmem.storage.base import StoreCounts
from graphmem.storage.postgres.scoping import and_visible, visible
from graphmem.storage.postgres.text import escape, extra_of, unescape

MEMORY_LOCK = 0x67726170686D6531
"""The advisory lock key of the whole memory (every write holds it, shared or exclusive)."""

MAX_KEY_LOCKS = 256
"""Past this many names and relation keys, a write locks the whole memory instead."""

_PAGE = 2000
"""Rows per round trip when a read walks a whole table."""

ENTITY_ROW = "id, name, entity_type, extra, project"
"""The columns of an entity row, as `_Reads._entities_of` takes them."""

_RELATION_ROW = "from_name, to_name, relation_type, extra, project"

KEYS = "unnest(%s::text[], %s::text[], %s::text[]) AS k (f, t, y)"
"""Relation keys as a table `k (f, t, y)`, from the three arrays of `key_columns`."""


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
    scope: Scope = EVERY
    """What every read and write inside it sees (graphmem.core.projects); a nested transaction
    joins this one in this scope."""
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


def _texts(values: Iterable[str]) -> list[str]:
    return [escape(value) for value in dict.fromkeys(values)]


def _entity(name: str, entity_type: str, observations: Iterable[str], extra: str | None, project: str) -> Entity:
    """An entity from its stored columns (observations already unescaped)."""
    return Entity(unescape(name), unescape(entity_type), tuple(observations), extra_of(extra), unescape(project))


def key_columns(keys: Iterable[tuple[str, str, str]]) -> tuple[list[str], list[str], list[str]]:
    """The sources, targets and types of distinct relation keys, escaped: the parameters of `KEYS`."""
    unique = list(dict.fromkeys(keys))
    return (
        [escape(key[0]) for key in unique],
        [escape(key[1]) for key in unique],
        [escape(key[2]) for key in unique],
    )


class _Reads:
    """The reads of `PostgresStore`; every one runs inside `read()` or `write()`, and answers
    within its transaction's scope."""

    _local: threading.local
    location: str

    @property
    def _tx(self) -> Transaction:
        tx: Transaction | None = getattr(self._local, "tx", None)
        if tx is None:
            raise RuntimeError("PostgresStore reads and writes happen inside read() or write().")
        return tx

    @property
    def _scope(self) -> Scope:
        return self._tx.scope

    def _seen(self, column: str) -> str:
        """` AND` the rows whose project `column` the transaction's scope sees (nothing for every project)."""
        return and_visible(self._tx.scope, column)

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
            self._lock_everything()
            return
        if tx.memory_lock is None:
            tx.cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", (MEMORY_LOCK,))
            tx.memory_lock = "shared"
        # Scanned in array order, so taken in sorted order: two writers never wait on each
        # other's keys of one batch in opposite orders.
        tx.cursor.execute("SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%s::bigint[]) AS k", (wanted,))
        tx.locked.update(wanted)

    def _lock_everything(self) -> None:
        """Inside a write: hold the whole memory alone until it ends (every other writer waits)."""
        tx = self._tx
        if tx.memory_lock != "exclusive":
            tx.cursor.execute("SELECT pg_advisory_xact_lock(%s)", (MEMORY_LOCK,))
            tx.memory_lock = "exclusive"

    def _lock_names(self, names: Iterable[str]) -> None:
        # By name alone, whatever the project: two writers creating one name, one in a project and
        # one in the shared space, take turns, and the second sees the name the first made.
        self._lock(lock_key("e", name) for name in names)

    def existing_names(self, names: Sequence[str]) -> set[str]:
        self._lock_names(names)
        rows = self._rows(f"SELECT name FROM entities WHERE name = ANY(%s){self._seen('project')}", (_texts(names),))
        return {unescape(name) for (name,) in rows}

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        resolved = {name: name for name in self.existing_names(names)}
        others = [name for name in dict.fromkeys(names) if name not in resolved]
        if others:
            rows = self._rows(
                "SELECT a.alias, e.name FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id"
                f" WHERE a.alias = ANY(%s){self._seen('e.project')} ORDER BY a.entity_id DESC",
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
            "SELECT e.name, e.entity_type, e.extra, e.project,"
            " (SELECT coalesce(array_agg(o.content ORDER BY o.id), '{}') FROM observations AS o"
            " WHERE o.entity_id = e.id) FROM entities AS e WHERE e.name = ANY(%s)"
            f"{self._seen('e.project')} ORDER BY e.id",
            (_texts(names),),
        )
        return [
            _entity(name, entity_type, map(unescape, contents), extra, project)
            for name, entity_type, extra, project, contents in rows
        ]

    def _entities_of(self, rows: Sequence[tuple[Any, ...]]) -> list[Entity]:
        """The entities of rows (id, name, type, extra, project), in the rows' order, with their observations."""
        observations: dict[int, list[str]] = {row[0]: [] for row in rows}
        if rows:
            for entity_id, content in self._rows(
                "SELECT entity_id, content FROM observations WHERE entity_id = ANY(%s) ORDER BY entity_id, id",
                (list(observations),),
            ):
                observations[entity_id].append(unescape(content))
        return [
            _entity(name, entity_type, observations[entity_id], extra, project)
            for entity_id, name, entity_type, extra, project in rows
        ]

    def iter_entities(self) -> Iterator[Entity]:
        last = 0
        while True:
            # Pages by id, not OFFSET: each page starts where the last ended, from the index.
            rows = self._rows(
                f"SELECT {ENTITY_ROW} FROM entities WHERE id > %s{self._seen('project')} ORDER BY id LIMIT %s",
                (last, _PAGE),
            )
            if not rows:
                return
            yield from self._entities_of(rows)
            last = rows[-1][0]

    def iter_relations(self) -> Iterator[Relation]:
        last = 0
        while True:
            rows = self._rows(
                f"SELECT id, {_RELATION_ROW} FROM relations WHERE id > %s{self._seen('project')} ORDER BY id LIMIT %s",
                (last, _PAGE),
            )
            if not rows:
                return
            yield from self._relations_of(row[1:] for row in rows)
            last = rows[-1][0]

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        # Read afresh each time, in the transaction's scope: nothing is kept between calls.
        if self._entity_count() > at_most:
            return None
        entities = [entity.to_wire() for entity in self.iter_entities()]
        if len(entities) > at_most:
            return None
        return {"entities": entities, "relations": [relation.to_wire() for relation in self.iter_relations()]}

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        if entity_type is None:
            total = self._entity_count()
            where, params = f" WHERE true{self._seen('project')}", []
        else:
            where, params = f" WHERE entity_type = %s{self._seen('project')}", [escape(entity_type)]
            ((total,),) = self._rows(f"SELECT count(*) FROM entities{where}", params)
        rows = self._rows(
            f"SELECT {ENTITY_ROW} FROM entities{where} ORDER BY id LIMIT %s OFFSET %s", (*params, limit, offset)
        )
        return self._entities_of(rows), int(total)

    def _relations_of(self, rows: Iterable[tuple[Any, ...]]) -> list[Relation]:
        """The relations of rows (from, to, type, extra, project)."""
        return [
            Relation(unescape(f), unescape(t), unescape(r), extra_of(extra), unescape(project))
            for f, t, r, extra, project in rows
        ]

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        texts = _texts(names)
        rows = self._rows(
            f"SELECT {_RELATION_ROW} FROM relations"
            f" WHERE (from_name = ANY(%s) OR to_name = ANY(%s)){self._seen('project')} ORDER BY id",
            (texts, texts),
        )
        return self._relations_of(rows)

    def relations_among(self, names: Sequence[str], limit: int) -> list[Relation]:
        texts = _texts(names)
        rows = self._rows(
            f"SELECT {_RELATION_ROW} FROM relations"
            f" WHERE from_name = ANY(%s) AND to_name = ANY(%s){self._seen('project')} ORDER BY id LIMIT %s",
            (texts, texts, limit),
        )
        return self._relations_of(rows)

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        return [relation.key for relation in self.relations_touching(names)]

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        self._lock(lock_key("r", *key) for key in keys)
        rows = self._rows(
            "SELECT r.from_name, r.to_name, r.relation_type FROM relations AS r"
            f" JOIN {KEYS} ON r.from_name = k.f AND r.to_name = k.t AND r.relation_type = k.y{self._seen('r.project')}",
            key_columns(keys),
        )
        return {(unescape(f), unescape(t), unescape(r)) for f, t, r in rows}

    def observations_of(self, name: str) -> list[str] | None:
        self._lock_names([name])
        # The oldest, should every project at once see the name twice (the domain names one).
        rows = self._rows(
            f"SELECT id FROM entities WHERE name = %s{self._seen('project')} ORDER BY id LIMIT 1", (escape(name),)
        )
        if not rows:
            return None
        contents = self._rows("SELECT content FROM observations WHERE entity_id = %s ORDER BY id", (rows[0][0],))
        return [unescape(content) for (content,) in contents]

    def counts(self) -> StoreCounts:
        if not self._scope.every:
            seen = visible(self._scope, "project")
            ((entities, relations, observations),) = self._rows(
                f"SELECT (SELECT count(*) FROM entities WHERE {seen}), (SELECT count(*) FROM relations WHERE {seen}),"
                " (SELECT count(*) FROM observations WHERE entity_id IN"
                f" (SELECT id FROM entities WHERE {seen}))"
            )
            return StoreCounts(int(entities), int(relations), int(observations))
        ((entities, relations, observations),) = self._rows(
            "SELECT entities, relations, observations FROM graphmem_state WHERE id = 1"
        )
        delta = self._tx.delta
        return StoreCounts(
            int(entities) + delta.entities, int(relations) + delta.relations, int(observations) + delta.observations
        )

    def _entity_count(self) -> int:
        """How many entities the scope sees: the kept count for every project, else counted
        (from the project index, so a small project's count costs what the project holds)."""
        if self._scope.every:
            return self.counts().entities
        ((count,),) = self._rows(f"SELECT count(*) FROM entities WHERE {visible(self._scope, 'project')}")
        return int(count)
