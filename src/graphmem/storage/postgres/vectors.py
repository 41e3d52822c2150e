"""PostgresStore's vectors: pgvector's table and HNSW index, the shared queue of texts to embed, and search by meaning.

    start ─► prepare_vectors: is `vectors` there? ─ yes ─► search by meaning on
                 │ no
                 ▼
             pgvector installed on the server? ─ no ─► off: "install pgvector"
                 │ yes
                 ▼
             CREATE EXTENSION vector ─ refused ─► off: "ask the owner to CREATE EXTENSION vector"
                 │
                 ▼
             CREATE TABLE vectors, its HNSW index; queue every text ─► on

The queue (`vector_queue`) and the triggers that fill it are migration 0002; they queue
nothing until `vectors` exists, and the step above runs at every start, so a database that
gets pgvector later is searched by meaning from the next start on. Texts are claimed with
`FOR UPDATE SKIP LOCKED` and a lease on the database's clock, so the embedding workers of
several graphmem servers on one database share the work. Search is pgvector's `<=>` (cosine
distance) through the HNSW index, or exact (a scan) where the index could not be made
(pgvector before 0.5 has no HNSW).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors as pg_errors

from graphmem.core.models import Entity
from graphmem.storage.postgres.reads import _Reads, _texts
from graphmem.storage.postgres.scoping import visible
from graphmem.storage.postgres.text import escape, extra_of, unescape
from graphmem.storage.vectors import (
    ENTITY_TEXT,
    OBSERVATION_TEXT,
    EmbeddedText,
    NearEntity,
    PendingText,
    VectorProgress,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DIMENSIONS", "VectorSupport", "prepare_vectors"]

DIMENSIONS = 384
"""The length of the stored vectors: the model's (all-MiniLM-L6-v2)."""

# Any constant key, the same in every graphmem: "gm-vecto" in ASCII. Two servers starting at
# once make the table once.
_PREPARE_LOCK = 0x676D2D766563746F

# Vectors read for each entity asked for (an entity has several texts), and at least; with a
# type filter the index is walked further (pgvector 0.8's iterative scan) or the type's
# vectors are scanned exactly, whichever the planner finds cheaper.
_CANDIDATES_PER_RESULT = 8
_FEWEST_CANDIDATES = 400
# HNSW returns at most ef_search rows (1,000 at most) unless it may scan on (pgvector 0.8+),
# where it stops at hnsw.max_scan_tuples (20,000 by default).
_MOST_EF_SEARCH = 1000
_MOST_CANDIDATES = 20_000

_NOT_INSTALLED = (
    "search by meaning on PostgreSQL needs the pgvector extension, which the database server at {location} "
    "does not have: install pgvector on that server (https://github.com/pgvector/pgvector#installation), "
    "then start graphmem again"
)
_NOT_ALLOWED = (
    "search by meaning on PostgreSQL needs the pgvector extension, which is installed on the server but not "
    "created in the database {database}, and this user may not create it: ask the database owner to run "
    "`CREATE EXTENSION vector;` in that database, then start graphmem again"
)
_READ_ONLY = (
    "this database has no table of vectors yet and the memory was opened read-only: start a graphmem "
    "server that may write it once"
)

_VECTORS_TABLE = f"""
CREATE TABLE vectors (
    kind           smallint NOT NULL,  -- as vector_queue.kind
    row_id         bigint NOT NULL,
    entity_id      bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    observation_id bigint REFERENCES observations (id) ON DELETE CASCADE,  -- row_id, for kind 1
    embedding      vector({DIMENSIONS}) NOT NULL,
    PRIMARY KEY (kind, row_id),
    CHECK (observation_id IS NOT DISTINCT FROM CASE WHEN kind = 1 THEN row_id END)
);
CREATE INDEX vectors_by_entity ON vectors (entity_id);
CREATE INDEX vectors_by_observation ON vectors (observation_id)
"""
_HNSW_INDEX = "CREATE INDEX vectors_embedding_hnsw ON vectors USING hnsw (embedding vector_cosine_ops)"
_QUEUE_EVERY_TEXT = (
    f"INSERT INTO vector_queue (kind, row_id) SELECT {ENTITY_TEXT}, id FROM entities ON CONFLICT DO NOTHING;"
    f" INSERT INTO vector_queue (kind, row_id) SELECT {OBSERVATION_TEXT}, id FROM observations ON CONFLICT DO NOTHING"
)


@dataclass(frozen=True)
class VectorSupport:
    """What this database offers search by meaning."""

    missing: str | None
    """Why it keeps no vectors, and what to do about it; None when it keeps them."""
    indexed: bool = False
    """The HNSW index is there (otherwise every search by meaning is exact)."""
    iterative: bool = False
    """pgvector 0.8 or later: an index scan may go on past ef_search until enough rows are found."""


def prepare_vectors(conn: psycopg.Connection[Any], location: str, *, create: bool = True) -> VectorSupport:
    """Make the vectors' table and index where pgvector can be had (at every start: cheap when done).

    Nothing here fails a start: a database without pgvector still serves every tool, and the
    returned `missing` says why search by meaning is off and what would turn it on.
    """
    if _table_exists(conn):
        if create and not _index_exists(conn) and _hnsw_available(conn):
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PREPARE_LOCK,))
                if not _index_exists(conn):
                    conn.execute(_HNSW_INDEX)
        return _support(conn)
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
        return VectorSupport(_NOT_INSTALLED.format(location=location))
    if not create:
        return VectorSupport(_READ_ONLY)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PREPARE_LOCK,))
        if not _table_exists(conn):  # or another server made it while this one waited
            try:
                with conn.transaction():  # a savepoint: a refusal leaves the transaction usable
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except pg_errors.InsufficientPrivilege:
                row = conn.execute("SELECT current_database()").fetchone()
                return VectorSupport(_NOT_ALLOWED.format(database=row[0] if row else "?"))
            except (pg_errors.FeatureNotSupported, pg_errors.UndefinedFile):
                return VectorSupport(_NOT_INSTALLED.format(location=location))
            # Writers wait while every text is queued: a text written meanwhile would be in
            # neither this snapshot nor the queue (its trigger ran before `vectors` existed).
            conn.execute("LOCK TABLE entities, observations IN SHARE MODE")
            conn.execute(_VECTORS_TABLE.encode())
            if _hnsw_available(conn):
                conn.execute(_HNSW_INDEX)
            conn.execute(_QUEUE_EVERY_TEXT.encode())
    return _support(conn)


def _relation_exists(conn: psycopg.Connection[Any], name: str) -> bool:
    # Read from pg_class with the statement's snapshot, not with to_regclass(): that one asks
    # the catalog cache, which a server that waited on the lock has not refreshed since, and
    # would not see the table another server made meanwhile.
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE c.relname = %s AND n.nspname = ANY(current_schemas(false)))",
        (name,),
    ).fetchone()
    return bool(row and row[0])


def _table_exists(conn: psycopg.Connection[Any]) -> bool:
    return _relation_exists(conn, "vectors")


def _index_exists(conn: psycopg.Connection[Any]) -> bool:
    return _relation_exists(conn, "vectors_embedding_hnsw")


def _hnsw_available(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT 1 FROM pg_am WHERE amname = 'hnsw'").fetchone() is not None


def _support(conn: psycopg.Connection[Any]) -> VectorSupport:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    version = tuple(int(part) for part in str(row[0]).split(".")[:2] if part.isdigit()) if row else ()
    return VectorSupport(None, indexed=_index_exists(conn), iterative=version >= (0, 8))


def _vector(values: npt.NDArray[np.float32]) -> list[float]:
    """A vector as a query parameter: sent as float8[] and cast `::real[]::vector` (exact for float32)."""
    return [float(value) for value in values.tolist()]


def _keys(keys: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    return [kind for kind, _ in keys], [row_id for _, row_id in keys]


_IN_KEYS = "(kind, row_id) IN (SELECT * FROM unnest(%s::smallint[], %s::bigint[]))"


class _Vectors(_Reads):
    """The `VectorStore` side of `PostgresStore`."""

    _vector_support: VectorSupport = VectorSupport("the database has not been opened")

    @property
    def why_no_vectors(self) -> str | None:
        return self._vector_support.missing

    def claim_texts(self, limit: int, lease_seconds: float) -> list[PendingText]:
        if self.why_no_vectors is not None or limit <= 0:
            return []
        # Looked for first in a read: an idle worker asking finds nothing without writing.
        with self.read():  # type: ignore[attr-defined]
            if not self._rows("SELECT 1 FROM vector_queue WHERE claimed_until < now() LIMIT 1"):
                return []
        with self.write():  # type: ignore[attr-defined]
            # Newest first, of each kind (half the batch each, the rest to whichever has more):
            # a fact just written is found by meaning soon, even while a large import waits.
            # Rows another server is claiming right now are skipped, not waited for.
            observations, entities = (
                [
                    (kind, row_id)
                    for (row_id,) in self._rows(
                        "SELECT row_id FROM vector_queue WHERE kind = %s AND claimed_until < now()"
                        " ORDER BY row_id DESC LIMIT %s FOR UPDATE SKIP LOCKED",
                        (kind, limit),
                    )
                ]
                for kind in (OBSERVATION_TEXT, ENTITY_TEXT)
            )
            taken_entities = min(len(entities), max(limit // 2, limit - len(observations)))
            keys = observations[: limit - taken_entities] + entities[:taken_entities]
            if not keys:
                return []
            self._tx.cursor.execute(
                f"UPDATE vector_queue SET claimed_until = now() + make_interval(secs => %s) WHERE {_IN_KEYS}",
                (lease_seconds, *_keys(keys)),
            )
            current = self._current_texts(keys, lock=False)
            gone = sorted(set(keys) - set(current))
            # Deletes remove their queue entries; a left-over one is dropped here, not retried forever.
            if gone:
                self._tx.cursor.execute(f"DELETE FROM vector_queue WHERE {_IN_KEYS}", _keys(gone))
        return [current[key][0] for key in keys if key in current]

    def _current_texts(
        self, keys: Sequence[tuple[int, int]], *, lock: bool
    ) -> dict[tuple[int, int], tuple[PendingText, int]]:
        """The texts of these queue keys as they are now (the ones still there), with their entity's id.

        With `lock`, their rows are held (FOR SHARE) until the transaction ends: a rename or a
        delete waits for the vectors about to be stored, then drops them as it would any other.
        A row a client is writing right now is skipped, not waited for (it is left out of the
        answer): the worker then never holds a lock a client waits for while it waits for one of
        the client's, so the two cannot deadlock.
        """
        held_observations = " FOR SHARE OF o SKIP LOCKED" if lock else ""
        held_entities = " FOR SHARE SKIP LOCKED" if lock else ""
        found: dict[tuple[int, int], tuple[PendingText, int]] = {}
        observation_ids = sorted(row_id for kind, row_id in keys if kind == OBSERVATION_TEXT)
        if observation_ids:
            for row_id, content, entity_id, name in self._rows(
                "SELECT o.id, o.content, e.id, e.name FROM observations AS o JOIN entities AS e ON e.id = o.entity_id"
                f" WHERE o.id = ANY(%s) ORDER BY o.id{held_observations}",
                (observation_ids,),
            ):
                pending = PendingText(OBSERVATION_TEXT, row_id, unescape(name), unescape(content))
                found[(OBSERVATION_TEXT, row_id)] = (pending, entity_id)
        entity_ids = sorted(row_id for kind, row_id in keys if kind == ENTITY_TEXT)
        if entity_ids:
            for row_id, name, extra in self._rows(
                f"SELECT id, name, extra FROM entities WHERE id = ANY(%s) ORDER BY id{held_entities}", (entity_ids,)
            ):
                text = unescape(name)
                aliases = Entity(text, "", (), extra_of(extra)).aliases
                found[(ENTITY_TEXT, row_id)] = (PendingText(ENTITY_TEXT, row_id, text, text, aliases), row_id)
        return found

    def save_vectors(self, embedded: Sequence[EmbeddedText]) -> int:
        if not embedded or self.why_no_vectors is not None:
            return 0
        with self.write():  # type: ignore[attr-defined]
            current = self._current_texts([(item.pending.kind, item.pending.row_id) for item in embedded], lock=True)
            rows: list[tuple[int, int, int, int | None, list[float]]] = []
            changed: list[PendingText] = []
            for item in embedded:
                pending = item.pending
                now = current.get((pending.kind, pending.row_id))
                if now is None:
                    # Deleted since (its queue entry went with it: this changes nothing), or being
                    # written by a client right now: given back, for the next batch.
                    changed.append(pending)
                    continue
                if (now[0].text, now[0].aliases) != (pending.text, pending.aliases):
                    changed.append(pending)  # renamed, or new aliases: it waits to be embedded again
                    continue
                # (An observation whose entity was renamed, or which moved in a merge, keeps its text:
                # its vector is stored for the entity it belongs to now.)
                observation_id = pending.row_id if pending.kind == OBSERVATION_TEXT else None
                rows.append((pending.kind, pending.row_id, now[1], observation_id, _vector(item.vector)))
            cursor = self._tx.cursor
            if rows:
                cursor.executemany(
                    "INSERT INTO vectors (kind, row_id, entity_id, observation_id, embedding)"
                    " VALUES (%s, %s, %s, %s, %s::real[]::vector)"
                    " ON CONFLICT (kind, row_id) DO UPDATE SET entity_id = excluded.entity_id,"
                    " embedding = excluded.embedding",
                    rows,
                )
                cursor.execute(f"DELETE FROM vector_queue WHERE {_IN_KEYS}", _keys([(row[0], row[1]) for row in rows]))
            self._release(changed)
        return len(rows)

    def seconds_until_a_claim_lapses(self) -> float | None:
        if self.why_no_vectors is not None:
            return None
        with self.read():  # type: ignore[attr-defined]
            ((soonest,),) = self._rows(
                "SELECT extract(epoch FROM min(claimed_until) - now()) FROM vector_queue"
                " WHERE claimed_until > '-infinity'"
            )
        return None if soonest is None else max(0.0, float(soonest))

    def release_texts(self, pending: Sequence[PendingText]) -> None:
        if pending and self.why_no_vectors is None:
            with self.write():  # type: ignore[attr-defined]
                self._release(pending)

    def _release(self, pending: Sequence[PendingText]) -> None:
        if pending:
            self._tx.cursor.execute(
                f"UPDATE vector_queue SET claimed_until = '-infinity' WHERE {_IN_KEYS}",
                _keys([(text.kind, text.row_id) for text in pending]),
            )

    def vector_progress(self) -> VectorProgress:
        if self.why_no_vectors is not None:
            return VectorProgress(0, 0, None)
        with self.read():  # type: ignore[attr-defined]
            # Every text has a vector or waits for one (the triggers and save_vectors keep it so),
            # so the vectors are counted from the kept counts, not by reading the whole table.
            ((waiting, texts, model),) = self._rows(
                "SELECT (SELECT count(*) FROM vector_queue), s.entities + s.observations,"
                " (SELECT fingerprint FROM vector_model WHERE id = 1) FROM graphmem_state AS s WHERE s.id = 1"
            )
        return VectorProgress(int(texts) - int(waiting), int(waiting), model)

    def any_waiting(self) -> bool:
        if self.why_no_vectors is not None:
            return False
        with self.read():  # type: ignore[attr-defined]
            return bool(self._rows("SELECT 1 FROM vector_queue LIMIT 1"))

    def waiting_among(self, names: Sequence[str]) -> set[str]:
        if self.why_no_vectors is not None or not names:
            return set()
        with self.read():  # type: ignore[attr-defined]
            rows = self._rows(
                f"SELECT e.name FROM entities AS e WHERE e.name = ANY(%s){self._seen('e.project')}"
                f" AND (EXISTS (SELECT 1 FROM vector_queue AS q WHERE q.kind = {ENTITY_TEXT} AND q.row_id = e.id)"
                " OR EXISTS (SELECT 1 FROM observations AS o JOIN vector_queue AS q"
                f"  ON q.kind = {OBSERVATION_TEXT} AND q.row_id = o.id WHERE o.entity_id = e.id))",
                (_texts(names),),
            )
        return {unescape(row[0]) for row in rows}

    def use_model(self, fingerprint: str) -> bool:
        if self.why_no_vectors is not None:
            return False
        with self.write():  # type: ignore[attr-defined]
            rows = self._rows("SELECT fingerprint FROM vector_model WHERE id = 1 FOR UPDATE")
            if rows and rows[0][0] == fingerprint:
                return False
            self._tx.cursor.execute(
                "INSERT INTO vector_model (id, fingerprint) VALUES (1, %s)"
                " ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint",
                (fingerprint,),
            )
            if not rows:
                return False
            self.drop_vectors()
        return True

    def drop_vectors(self) -> None:
        if self.why_no_vectors is not None:
            return
        with self.write():  # type: ignore[attr-defined]
            # TRUNCATE, not DELETE: a few milliseconds at any size, the HNSW index emptied with it.
            self._tx.cursor.execute(b"TRUNCATE vectors, vector_queue; " + _QUEUE_EVERY_TEXT.encode())

    def warm_vectors(self) -> int:
        # The HNSW index lives in PostgreSQL's own buffers: nothing to read into this process.
        return self.vector_progress().embedded

    def nearest_entities(
        self, query: npt.NDArray[np.float32], model: str, limit: int, entity_type: str | None = None
    ) -> list[NearEntity]:
        support = self._vector_support
        if support.missing is not None or limit <= 0:
            return []
        with self.read():  # type: ignore[attr-defined]
            if self._rows("SELECT fingerprint FROM vector_model WHERE id = 1") != [(model,)]:
                return []
            params: dict[str, Any] = {"query": _vector(query)}
            # The type and the projects filter inside the query: the planner walks the HNSW
            # index on (pgvector 0.8's iterative scan) or scores the few vectors of a small
            # project exactly, found from its entities (entities_by_project, vectors_by_entity),
            # whichever it finds cheaper.
            conditions = [] if self._scope.every else [visible(self._scope, "project")]
            if entity_type is not None:
                conditions.append("entity_type = %(type)s")
                params["type"] = escape(entity_type)
            among = ""
            if conditions:
                among = f" WHERE v.entity_id IN (SELECT id FROM entities WHERE {' AND '.join(conditions)})"
            wanted = max(_CANDIDATES_PER_RESULT * limit, _FEWEST_CANDIDATES)
            most = _MOST_CANDIDATES if support.iterative or not support.indexed else _MOST_EF_SEARCH
            best: dict[int, float] = {}
            while True:
                count = min(wanted, most)
                if support.indexed:
                    self._set_search_breadth(count, support.iterative)
                params["count"] = count
                rows = self._rows(
                    "SELECT v.entity_id, v.embedding <=> %(query)s::real[]::vector AS distance FROM vectors AS v"
                    f"{among} ORDER BY v.embedding <=> %(query)s::real[]::vector LIMIT %(count)s",
                    params,
                )
                best = {}
                for entity_id, distance in rows:
                    best.setdefault(entity_id, 1.0 - float(distance))  # rows come nearest first
                # An entity scores as its best text: enough rows must be read for `limit` entities.
                if len(best) >= limit or len(rows) < count or count >= most:
                    break
                wanted = count * 4
            ranked = sorted(best.items(), key=lambda item: -item[1])[:limit]
            names = dict(self._rows("SELECT id, name FROM entities WHERE id = ANY(%s)", ([id_ for id_, _ in ranked],)))
        return [NearEntity(unescape(names[entity_id]), score) for entity_id, score in ranked if entity_id in names]

    def _set_search_breadth(self, count: int, iterative: bool) -> None:
        """The HNSW search's breadth for `count` rows, for this transaction only (PgBouncer-safe)."""
        settings = f"SET LOCAL hnsw.ef_search = {max(40, min(count, _MOST_EF_SEARCH))}"
        if iterative:
            # Past ef_search rows (or under a type filter) the scan goes on, in exact distance order.
            settings += "; SET LOCAL hnsw.iterative_scan = strict_order"
        self._tx.cursor.execute(settings.encode())
