"""SQLiteStore: the default backend, one SQLite file in WAL mode.

Every tool call is one transaction. Writers take the write lock up front
(`BEGIN IMMEDIATE`) so two processes never deadlock upgrading a read lock, and
SQLite's busy timeout makes a second process wait its turn instead of failing.
`synchronous=FULL` makes a commit durable before the call answers.

This module opens the file, migrates it and runs the transactions; the class takes its
reads, writes and searches from reads.py, writes.py and search.py, and the migration
scripts and read-only opening from schema.py.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path

from graphmem.core.errors import SchemaVersionError
from graphmem.core.projects import EVERY, Scope
from graphmem.storage.base import (
    describes_damage,
    map_backend_errors,
    map_driver_errors,
)
from graphmem.storage.sqlite import projects_schema
from graphmem.storage.sqlite import ranking as sqlite_ranking
from graphmem.storage.sqlite.changes import _Changes
from graphmem.storage.sqlite.checkpoints import FALLBACK_PAGES, Checkpointer, merge_step
from graphmem.storage.sqlite.damage import check_for_damage as check_for_damage_in
from graphmem.storage.sqlite.pending import TEXT_LIMIT, WORDS_LIMIT, has_stale_words, index_pending, more_pending_than
from graphmem.storage.sqlite.project_words import scope_word_tables
from graphmem.storage.sqlite.schema import (
    SCHEMA_VERSION,
    _connect_read_only,
    _migrations,
    _split_sql,
    create_private_file,
    refuse_a_foreign_database,
)
from graphmem.storage.sqlite.scoping import ENTITY_MARK_SQL, OBSERVATION_MARK_SQL
from graphmem.storage.sqlite.search import _Search
from graphmem.storage.sqlite.text import (
    TRIGRAM_FORM,
)
from graphmem.storage.sqlite.vectors import _Vectors
from graphmem.storage.sqlite.writes import _Writes
from graphmem.storage.vectors import ENTITY_TEXT, OBSERVATION_TEXT

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

# How long a write waits for another process's transaction before giving up. Long on
# purpose: an agent would rather wait than see "database is locked".
BUSY_TIMEOUT_SECONDS = 60.0


_BEGIN_WRITE = "BEGIN IMMEDIATE"


# Run first in each write: it reloads the schema if another connection changed it. In SQLite
# 3.40 (Python 3.11's), once another connection has dropped and recreated triggers (a bulk
# import does), the first DELETE from a table with a foreign key here fails with "no such
# table" instead of reloading the schema; any read of the schema table first avoids that.
_LOAD_SCHEMA = "SELECT 1 FROM sqlite_master LIMIT 1"


# SQLite's page cache for this connection, filled only as pages are read. The default
# (2 MB) holds little of a large memory: reading the relations of the first entities (a
# few hundred rows spread over the table) then reads most pages from the operating system
# again, 1.15 ms instead of 0.7 at 40,000 entities (8 MB was enough there). 16 MB keeps
# the server well within the 150 MB it may take at a million entities.
_CACHE_KIB = 16 * 1024


# How often (in SQLite virtual-machine steps, about a millisecond's worth) a call under a
# time limit checks the clock.
_PROGRESS_STEPS = 100_000


# Row triggers that keep the indexes current one insert at a time, and for each the one
# statement that does its work for every row inserted after the marks (the largest ids
# before a bulk insert). A bulk insert suspends them: a trigger's insert into an FTS5
# table runs in a statement savepoint of its own, and FTS5 writes out its pending terms
# at every savepoint, so a bulk load through triggers makes one tiny index segment per
# row and then merges them all (4.5 s of a 40,000-entity import, where one INSERT …
# SELECT takes 0.7 s); the degree upserts cost another 3 s row by row.
_BULK_CATCH_UP = {
    "entities_ai": (
        "INSERT INTO entity_text (rowid, name_lc, type_lc)"
        f" SELECT id, {ENTITY_MARK_SQL.format(entity='entities')} || {TRIGRAM_FORM.format('name_lc')},"
        f" {TRIGRAM_FORM.format('type_lc')} FROM entities WHERE id > :entity"
    ),
    "observations_ai": (
        "INSERT INTO observation_text (rowid, content_lc)"
        f" SELECT id, {OBSERVATION_MARK_SQL.format(observation='observations')} || {TRIGRAM_FORM.format('content_lc')}"
        " FROM observations WHERE id > :observation"
    ),
    "entity_words_entities_ai": (
        "INSERT OR IGNORE INTO entity_words_stale (entity_id) SELECT id FROM entities WHERE id > :entity"
    ),
    "entity_words_observations_ai": (
        "INSERT OR IGNORE INTO entity_words_stale (entity_id)"
        " SELECT DISTINCT entity_id FROM observations WHERE id > :observation"
    ),
    "degrees_ai": (
        "INSERT INTO degrees (name, degree) SELECT name, count(*) FROM ("
        " SELECT from_name AS name FROM relations WHERE id > :relation"
        " UNION ALL SELECT to_name FROM relations WHERE id > :relation AND to_name <> from_name"
        ") WHERE true GROUP BY name ON CONFLICT (name) DO UPDATE SET degree = degree + excluded.degree"
    ),
    "entities_count_ai": (
        "UPDATE row_counts SET count = count + (SELECT count(*) FROM entities WHERE id > :entity)"
        " WHERE name = 'entities'"
    ),
    "observations_count_ai": (
        "UPDATE row_counts SET count = count + (SELECT count(*) FROM observations WHERE id > :observation)"
        " WHERE name = 'observations'"
    ),
    "relations_count_ai": (
        "UPDATE row_counts SET count = count + (SELECT count(*) FROM relations WHERE id > :relation)"
        " WHERE name = 'relations'"
    ),
    "entity_type_counts_ai": (
        "INSERT INTO entity_type_counts (entity_type, count)"
        " SELECT entity_type, count(*) FROM entities WHERE id > :entity GROUP BY entity_type"
        " ON CONFLICT (entity_type) DO UPDATE SET count = count + excluded.count"
    ),
    "vectors_entities_ai": (
        f"INSERT OR IGNORE INTO vectors_stale (kind, row_id) SELECT {ENTITY_TEXT}, id FROM entities WHERE id > :entity"
    ),
    "vectors_observations_ai": (
        f"INSERT OR IGNORE INTO vectors_stale (kind, row_id) SELECT {OBSERVATION_TEXT}, id FROM observations"
        " WHERE id > :observation"
    ),
    "relation_writes_ai": "UPDATE write_counts SET count = count + 1 WHERE name = 'relations'",
    "relation_type_counts_ai": (
        "INSERT INTO relation_type_counts (relation_type, count)"
        " SELECT relation_type, count(*) FROM relations WHERE id > :relation GROUP BY relation_type"
        " ON CONFLICT (relation_type) DO UPDATE SET count = count + excluded.count"
    ),
}


# How long a read waits for another writer's lock to bring the word index up to date
# before it reads without (see SQLiteStore._catch_up_words).
_CATCH_UP_LOCK_WAIT_MS = 100


# Pages of merge work per index per step at the end of a bulk insert: the import holds the
# write lock anyway, so large steps.
_BULK_MERGE_PAGES = 2_000


def _cannot_write(error: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a write for want of room or permission, or another writer's lock:
    nothing a read needs, so the word index's catch-up may give up on it."""
    name = getattr(error, "sqlite_errorname", "")
    return name in ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_BUSY", "SQLITE_LOCKED") or name.startswith(
        ("SQLITE_IOERR", "SQLITE_READONLY_", "SQLITE_BUSY_")
    )


class SQLiteStore(_Writes, _Search, _Vectors, _Changes):
    """A `Store` over one SQLite database file (or `:memory:`)."""

    def __init__(
        self,
        path: Path | str,
        *,
        read_only: bool = False,
        cache_kib: int | None = None,
        check_for_damage: bool = False,
        derived_only: bool = False,
    ) -> None:
        """Open (or create) the database; `read_only` opens an existing one without writing anything,
        so that a memory in a folder this user cannot write can still be read and exported;
        `cache_kib` sizes the connection's page cache (by default, what serving reads needs);
        `check_for_damage` reads what damage.py's bounded check reads and refuses a memory
        with damaged pages (`StorageError`), as a server's start does;
        `derived_only` is for a connection that writes only what is derived from the memory
        (the embedding worker's vectors and their queue): its commits are not synced one by
        one, and it leaves checkpoints to the log's own limit rather than run a thread for them."""
        self.location = str(path)
        # A vector lost to a power cut is only embedded again (its claim expires), so the
        # worker's commits skip the fsync each of them cost (issue 27, item 13).
        self._synchronous = "NORMAL" if derived_only else "FULL"
        with map_backend_errors():
            if read_only:
                self._conn = _connect_read_only(Path(path))
            else:
                if str(path) != ":memory:":
                    create_private_file(Path(path))
                # check_same_thread=False: calls arrive on worker threads; self._lock serialises them.
                self._conn = sqlite3.connect(
                    str(path), timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
                )
            try:
                # Before WAL mode is set: another application's database is left exactly as it was.
                refuse_a_foreign_database(self._conn, self.location)
                if not read_only:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute(f"PRAGMA synchronous={self._synchronous}")
                self._conn.execute("PRAGMA foreign_keys=ON")
                self._conn.execute(f"PRAGMA cache_size=-{cache_kib or _CACHE_KIB}")
                if read_only:
                    self._check_schema_is_current()
                else:
                    self._migrate()
                if check_for_damage and str(path) != ":memory:":
                    check_for_damage_in(self._conn, os.stat(path).st_size)
            except BaseException:
                self._conn.close()
                raise
        self._checkpointer: Checkpointer | None = None
        if str(path) != ":memory:" and not read_only:
            if not derived_only:
                # The worker's commits, several a second, each woke this thread to copy the
                # log and fsync the file; the clients' writes and the log's limit copy it.
                self._checkpointer = Checkpointer(str(path), BUSY_TIMEOUT_SECONDS)
            self._conn.execute(f"PRAGMA wal_autocheckpoint={FALLBACK_PAGES}")
        self._lock = threading.RLock()
        self._term_counts = sqlite_ranking.TermCounts()
        self._writes = 0
        """Write transactions this connection committed: what it changed, data_version does not show."""
        self._official = None
        """The last official_graph answer of a small memory, and the state it was read in."""
        self._depth = 0
        self._scope = EVERY
        """The scope of the transaction in progress (graphmem.core.projects); EVERY between them."""
        self._read_only = read_only
        self._writing = False
        self._bulk = False

    def _check_schema_is_current(self) -> None:
        current = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current}, but this graphmem knows only up to "
                f"{SCHEMA_VERSION}; upgrade graphmem to open it."
            )
        if current < SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current} and this graphmem reads {SCHEMA_VERSION}; "
                "it cannot be upgraded without write access. Open it once where it can be written."
            )

    def integrity_problems(self) -> list[str]:
        with self._lock, map_backend_errors():
            try:
                rows = [row[0] for row in self._conn.execute("PRAGMA quick_check")]
            except sqlite3.DatabaseError as exc:
                if not describes_damage(str(exc)):
                    raise
                # Pages too damaged for the check to go on: that is its finding, not a failure.
                return [str(exc)]
        return [] if rows == ["ok"] else rows

    def _migrate(self) -> None:
        current = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.location} has schema version {current}, but this graphmem knows only up to "
                f"{SCHEMA_VERSION}; upgrade graphmem to open it."
            )
        pending = [(number, sql) for number, sql in _migrations() if number > current]
        if not pending:
            return
        # Off while the schema changes (SQLite's recipe for remaking a table): dropping the old
        # `entities` would otherwise delete every observation by its ON DELETE CASCADE. It can
        # only be switched outside a transaction; foreign_key_check proves nothing was broken.
        self._conn.execute("PRAGMA foreign_keys=OFF")
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            current = self._conn.execute("PRAGMA user_version").fetchone()[0]
            for number, sql in pending:
                if number > current:
                    if number == projects_schema.MIGRATION:
                        projects_schema.give_tables_projects(self._conn)
                    for statement in _split_sql(sql):
                        self._conn.execute(statement)
                    self._conn.execute(f"PRAGMA user_version = {number}")
            broken = self._conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise SchemaVersionError(f"{self.location}: migrating left {len(broken)} rows without their entity")
            self._refresh_word_index()
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        finally:
            self._conn.execute("PRAGMA foreign_keys=ON")

    @contextmanager
    def _transaction(self, begin: str, scope: Scope) -> Iterator[None]:
        with self._lock:
            if self._depth:
                # Already inside a transaction on this connection: join it, in its scope, or in
                # the narrower one asked for inside a transaction of every project, for this block.
                narrows = self._scope.every and not scope.every
                if scope != self._scope and scope != EVERY and not narrows:
                    raise ValueError(f"a transaction in {self._scope} cannot join one in {scope}")
                outer = self._scope
                self._depth += 1
                if narrows:
                    self._scope = scope
                try:
                    yield
                finally:
                    self._depth -= 1
                    self._scope = outer
                return
            self._scope = scope
            with map_backend_errors():
                if begin != _BEGIN_WRITE and not self._read_only:
                    self._catch_up_words()
                self._conn.execute(begin)
                if begin == _BEGIN_WRITE:
                    self._conn.execute(_LOAD_SCHEMA).fetchall()
            self._depth = 1
            self._writing = begin == _BEGIN_WRITE
            try:
                with map_driver_errors():
                    yield
                    if self._writing and more_pending_than(self._conn, TEXT_LIMIT, WORDS_LIMIT):
                        # A flood of writes the background thread found no pause in.
                        self._index_every_pending_text()
            except BaseException:
                self._depth, self._writing, self._scope = 0, False, EVERY
                self._roll_back()
                raise
            wrote, self._depth, self._writing, self._scope = self._writing, 0, False, EVERY
            if wrote:
                # The word index may have changed: the terms' counts are recounted.
                self._term_counts.forget()
                self._writes += 1
            try:
                with map_backend_errors():
                    self._conn.execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
            if wrote and self._checkpointer is not None:
                self._checkpointer.request()

    def _catch_up_words(self) -> None:
        """Before a read: rebuild the word documents the writes left for the background thread,
        if it has not yet, so that the read ranks every entity as it now is.

        A short write transaction of its own, committed without an fsync: it only derives
        the index from rows already durable, and if it is lost the marks are lost with it,
        so the next read does it again. If another writer holds the lock past a moment, the
        read goes on without it (the searches then narrow by trigrams, never by the words),
        and so it does when the rebuild cannot be written (a full disk).
        """
        if not has_stale_words(self._conn):
            return
        (waited,) = self._conn.execute("PRAGMA busy_timeout").fetchone()
        self._conn.execute(f"PRAGMA busy_timeout = {_CATCH_UP_LOCK_WAIT_MS}")
        # Set outside a transaction (SQLite refuses it inside one), and back to FULL after.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        try:
            try:
                self._conn.execute(_BEGIN_WRITE)
            except sqlite3.OperationalError:
                return  # busy (or a file this process may not write): read as it is
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {waited}")
            try:
                self._conn.execute(_LOAD_SCHEMA).fetchall()
                self._refresh_word_index()
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as error:
                self._roll_back()
                if not _cannot_write(error):
                    raise  # an interrupt (the call's time limit), damage: the read's own failure
                # A full disk (issue 27, item 9), a file made read-only: the rebuilt documents
                # cannot be written, and the read must not fail for it; the marks stay for later.
                return
            except BaseException:
                self._roll_back()
                raise
        finally:
            self._conn.execute(f"PRAGMA synchronous={self._synchronous}")
        self._term_counts.forget()

    def _roll_back(self) -> None:
        # A statement stopped by the time limit has already rolled its transaction back
        # (SQLite does so on an interrupt); a second ROLLBACK would fail.
        if self._conn.in_transaction:
            with map_backend_errors():
                self._conn.execute("ROLLBACK")

    def write(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        return self._transaction(_BEGIN_WRITE, scope)

    def read(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        return self._transaction("BEGIN", scope)

    @contextmanager
    def bulk_insert(self) -> Iterator[None]:
        with self._lock:
            if not self._writing:
                raise RuntimeError("bulk_insert() runs inside write().")
            if self._bulk:
                yield
                return
            marks = {
                name: self._conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
                for name, table in (("entity", "entities"), ("observation", "observations"), ("relation", "relations"))
            }
            definitions = self._conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN"
                f" ({', '.join('?' * len(_BULK_CATCH_UP))})",
                tuple(_BULK_CATCH_UP),
            ).fetchall()
            # Inside the write transaction: if anything fails, the rollback brings the
            # triggers back with everything else, and other connections never see them gone.
            for name, _ in definitions:
                self._conn.execute(f"DROP TRIGGER {name}")
            self._bulk = True
            try:
                yield
            finally:
                self._bulk = False
            for name, sql in definitions:
                self._conn.execute(_BULK_CATCH_UP[name], marks)
                self._conn.execute(sql)
            # Everything indexed before the merge below, rather than left for later.
            self._index_every_pending_text()
            # The text indexes' segments are merged before the import commits, as FTS5's
            # automerge did before migration 0014: an imported memory may be served for a
            # long time without the write that would start the background merging.
            while merge_step(self._conn, _BULK_MERGE_PAGES):
                pass

    def index_pending_texts(self) -> None:
        """Index now every text the writes left for the background thread (see pending.py)."""
        with self.write():
            self._index_every_pending_text()

    def _index_every_pending_text(self) -> None:
        """Inside a write transaction: the trigram indexes' pending rows and the stale word documents."""
        index_pending(self._conn)
        self._refresh_word_index()

    def close(self) -> None:
        with self._lock:
            self._release_vector_index()
            if self._checkpointer is not None:
                self._checkpointer.close()
            self._conn.close()

    def size_on_disk(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with suppress(FileNotFoundError):
                total += os.stat(f"{self.location}{suffix}").st_size
        return total

    def compact(self, thorough: bool = False) -> None:
        with self._lock, map_backend_errors():
            if self._depth:
                raise RuntimeError("compact() cannot run inside a transaction.")
            self.index_pending_texts()
            # Merge each full-text index's segments, rewrite the file without free pages,
            # then empty the write-ahead log into it.
            own = scope_word_tables(self._conn)
            for table in ("entity_words", "entity_text", "observation_text", *own):
                self._conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        if seconds <= 0:
            yield
            return
        deadline = time.monotonic() + seconds

        def past_deadline() -> bool:
            # SQLite calls this every _PROGRESS_STEPS virtual-machine steps; True interrupts
            # the statement, which fails as "interrupted" and rolls its transaction back.
            return time.monotonic() > deadline

        with self._lock:
            self._conn.set_progress_handler(past_deadline, _PROGRESS_STEPS)
            try:
                yield
            finally:
                self._conn.set_progress_handler(None, 0)

    def wait_for_locks(self, seconds: float) -> None:
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {max(0, round(seconds * 1000))}")

    def committed_writes(self) -> int:
        return self._writes
