"""PostgresStore: the team backend, one PostgreSQL database shared by many graphmem servers.

    write(scope): borrow a connection (lending.py) ─► BEGIN READ COMMITTED ─► SET LOCAL timeouts ─► the block
                  (names it reads or writes locked: pg_advisory_xact_lock, in sorted order)
                  ─► rebuild the word documents it changed ─► bump graphmem_state ─► COMMIT
    read(scope):  borrow a connection ─► BEGIN REPEATABLE READ READ ONLY ─► the block ─► COMMIT

Each thread has its own transaction (a connection of the pool), so one server answers several
reads at once. The transaction holds its scope (graphmem.core.projects): every read and write
in the block keeps to the projects it sees (scoping.py), and one opened inside it joins it.
Serialization failures, deadlocks and lock timeouts are `StorageBusyError`: the server makes
the whole call again (server/store_access.py). The class takes its reads from reads.py and
navigation.py, its writes from writes.py and its searches from search.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

from graphmem.core.errors import SchemaVersionError, StorageError
from graphmem.core.projects import EVERY, Scope
from graphmem.storage.postgres.changes import _Changes
from graphmem.storage.postgres.connection import IDLE_IN_TRANSACTION_MS, map_postgres_errors
from graphmem.storage.postgres.lending import ConnectionLender
from graphmem.storage.postgres.reads import Transaction
from graphmem.storage.postgres.schema import SCHEMA_VERSION, migrate
from graphmem.storage.postgres.search import _Search
from graphmem.storage.postgres.vectors import _Vectors, prepare_vectors

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

# As SQLite's busy timeout: an agent would rather wait than fail. A server sets it short.
LOCK_WAIT_SECONDS = 60.0

_STATE_DELTA = (
    "UPDATE graphmem_state SET writes = writes + 1, entities = entities + %s, observations = observations + %s,"
    " relations = relations + %s, words = words + %s WHERE id = 1"
)


_STATE_ROW_WAIT_MS = 5_000
"""How long a write waits for the state row, the last lock every write takes."""


class PostgresStore(_Search, _Vectors, _Changes):
    """A `Store` over one PostgreSQL database (a `postgresql://` URL).

    Args:
        url: the libpq URL, password and `sslmode` included.
        location: how to show it to people: the URL without its password.
    """

    def __init__(self, url: str, location: str, *, read_only: bool = False) -> None:
        self.location = location
        self._read_only = read_only
        self._local = threading.local()
        self._counter = threading.Lock()
        self._writes = 0
        self._lock_wait = LOCK_WAIT_SECONDS
        self._term_counts = {}
        self._connections = ConnectionLender(url, location)
        try:
            with map_postgres_errors(), self._connections.connection() as conn:
                if read_only:
                    self._check_schema_is_current(conn)
                else:
                    migrate(conn, location)
                self._vector_support = prepare_vectors(conn, location, create=not read_only)
        except BaseException:
            self._connections.close()
            raise

    def _check_schema_is_current(self, conn: psycopg.Connection[Any]) -> None:
        """For a read-only open: refuse a schema other than this graphmem's (a new, empty
        database has none: version 0), as the SQLite backend does, so that the caller may
        open it for writing, which migrates it."""
        row = conn.execute("SELECT to_regclass('graphmem_schema') IS NOT NULL").fetchone()
        current = 0
        if row is not None and row[0]:
            found = conn.execute("SELECT coalesce(max(version), 0) FROM graphmem_schema").fetchone()
            current = 0 if found is None else int(found[0])
        if current != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current} and this graphmem reads {SCHEMA_VERSION}; "
                "open it once with a graphmem that may write it."
            )

    # -- transactions -------------------------------------------------------------

    @contextmanager
    def _transaction(self, writing: bool, scope: Scope) -> Iterator[None]:
        current: Transaction | None = getattr(self._local, "tx", None)
        if current is not None:
            if writing and not current.writing:
                raise RuntimeError("write() cannot start inside read(); open the write first.")
            narrows = current.scope.every and not scope.every
            if scope != current.scope and scope != EVERY and not narrows:
                raise ValueError(f"a transaction in {current.scope} cannot join one in {scope}")
            # Already inside a transaction on this thread: join it, in its scope, or in the
            # narrower one asked for inside a transaction of every project, for this block.
            outer = current.scope
            current.depth += 1
            if narrows:
                current.scope = scope
            try:
                yield
            finally:
                current.depth -= 1
                current.scope = outer
            return
        if writing and self._read_only:
            raise StorageError(f"The memory at {self.location} was opened read-only; nothing was changed.")
        deadline: float | None = getattr(self._local, "deadline", None)
        timed = deadline is not None
        begin = "BEGIN ISOLATION LEVEL READ COMMITTED" if writing else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        statement_ms = 0 if deadline is None else max(1, round((deadline - time.monotonic()) * 1000))
        # One round trip, all LOCAL: nothing outlives the transaction (PgBouncer-safe).
        # A read also takes the memory's write counter, which its snapshot sees: what it
        # remembers (the number of entities holding a word) is valid for that count.
        first = (
            f"{begin}; SET LOCAL lock_timeout = {max(1, round(self._lock_wait * 1000))};"
            f" SET LOCAL statement_timeout = {statement_ms};"
            f" SET LOCAL idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}"
            + ("" if writing else "; SELECT writes FROM graphmem_state WHERE id = 1")
        )
        with map_postgres_errors(timed), self._connections.first_statement(first) as (conn, cursor):
            # The scope lives on the transaction, which lives on this thread: another thread's
            # transaction, on another connection, has its own.
            tx = Transaction(conn, writing, scope)
            if not writing:
                while cursor.nextset():
                    pass
                row = cursor.fetchone()
                tx.version = None if row is None else int(row[0])
            self._local.tx = tx
            try:
                yield
                if writing:
                    self._finish_write(tx)
                conn.execute("COMMIT")
            except BaseException:
                if not conn.closed:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._local.tx = None
        if writing:
            with self._counter:
                self._writes += 1

    def _finish_write(self, tx: Transaction) -> None:
        """The end of every write: the changed entities' word documents, then the counts and the
        write counter in one statement, last, so that writers wait on that one row only briefly."""
        self._refresh_words()
        delta = tx.delta
        # Every write ends on this one row, and the writer before holds it only for its commit:
        # waiting for it cannot deadlock (nothing waits while holding it), so it is worth a wait
        # longer than the call's short lock wait, which would make the whole call start again.
        tx.cursor.execute(f"SET LOCAL lock_timeout = {_STATE_ROW_WAIT_MS}")
        tx.cursor.execute(_STATE_DELTA, (delta.entities, delta.observations, delta.relations, delta.words))

    def write(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        return self._transaction(writing=True, scope=scope)

    def read(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        return self._transaction(writing=False, scope=scope)

    @contextmanager
    def bulk_insert(self) -> Iterator[None]:
        tx = self._tx
        if not tx.writing:
            raise RuntimeError("bulk_insert() runs inside write().")
        if tx.bulk:
            yield
            return
        tx.bulk = True
        try:
            yield
        finally:
            tx.bulk = False
        # Fresh statistics for the planner: right after a large load it knows none, and
        # chooses scans that made a point read 5 ms and a search 80 ms at 40,000 entities
        # (0.5 and 28 ms after). ANALYZE, unlike VACUUM, runs inside the transaction.
        tx.cursor.execute("ANALYZE entities, observations, entity_aliases, relations, entity_words")

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        if seconds <= 0:
            yield
            return
        self._local.deadline = time.monotonic() + seconds
        tx: Transaction | None = getattr(self._local, "tx", None)
        if tx is not None:
            with map_postgres_errors():
                tx.conn.execute(f"SET LOCAL statement_timeout = {max(1, round(seconds * 1000))}".encode())
        try:
            yield
        finally:
            self._local.deadline = None

    def wait_for_locks(self, seconds: float) -> None:
        self._lock_wait = max(0.001, seconds)

    def committed_writes(self) -> int:
        with self._counter:
            return self._writes

    def version(self) -> Hashable | None:
        if getattr(self._local, "tx", None) is not None:
            return None
        query = "SELECT writes FROM graphmem_state WHERE id = 1"
        with map_postgres_errors(), self._connections.first_statement(query) as (_, cursor):
            row = cursor.fetchone()
        return None if row is None else ("postgres", row[0])

    def integrity_problems(self) -> list[str]:
        problems = []
        with self.read():
            cursor = self._tx.cursor
            cursor.execute(
                "SELECT (SELECT count(*) FROM entities) - entities, (SELECT count(*) FROM observations) - observations,"
                " (SELECT count(*) FROM relations) - relations FROM graphmem_state WHERE id = 1"
            )
            row = cursor.fetchone()
            if row is None:
                return ["the graphmem_state row is missing"]
            for what, off in zip(("entities", "observations", "relations"), row, strict=True):
                if off:
                    problems.append(f"the kept count of {what} is off by {-off}")
        return problems

    def size_on_disk(self) -> int:
        with map_postgres_errors(), self._connections.connection() as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return 0 if row is None else int(row[0])

    def compact(self, thorough: bool = False) -> None:
        if getattr(self._local, "tx", None) is not None:
            raise RuntimeError("compact() cannot run inside a transaction.")
        # VACUUM cannot run inside a transaction block: the pool's connections are autocommit.
        with map_postgres_errors(), self._connections.connection() as conn:
            if thorough:
                # Rewritten tables keep no dead row: the text a fix took out is in no page of them.
                tables = "entities, observations, entity_aliases, relations, entity_words, changes, change_entities"
                conn.execute(f"VACUUM (FULL, ANALYZE) {tables}")
            conn.execute("VACUUM (ANALYZE) entities, observations, entity_aliases, relations, graphmem_state")

    def close(self) -> None:
        self._connections.close()
