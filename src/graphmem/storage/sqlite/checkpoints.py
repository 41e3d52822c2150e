"""Checkpoints of a SQLite write-ahead log, and merges of the full-text indexes, run on a thread
of their own instead of in a commit.

By default SQLite copies the log into the database file inside the commit that takes it
past 1,000 pages: that tool call pays 4 to 50 ms (the copy and an fsync of the database
file) on top of its own write, once every few dozen writes. A commit is durable once the
log is synced, so the copy can wait: this thread does it just after the writes, on a
connection of its own, while the next calls run.

The same goes for merging the full-text indexes' segments (migration 0014): each write adds
one small segment per index and leaves the merging to this thread, which does it in short
transactions of its own once the writes have settled, before the checkpoint. And for indexing
the texts the writes left pending (migration 0015, pending.py), done first, in the same way:
never while calls keep writing, so a step never makes a call wait (a writer waiting for the
lock backs off in sleeps of up to 100 ms: one call waited 155 ms while this thread indexed).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import suppress

from graphmem.storage.sqlite.pending import index_step

__all__ = ["FALLBACK_PAGES", "TEXT_INDEXES", "Checkpointer", "merge_step", "merge_text_indexes"]

# The writer's own automatic checkpoint stays on at this many pages (16 MB). Under a
# flood of writes the log cannot start over while this thread copies it (a write always
# lands during the copy), so it grows; the writer's checkpoint then bounds it, and has
# little left to copy, because this thread already copied nearly all of it.
FALLBACK_PAGES = 4_000

# A checkpoint waits this long after the write that asked for it, so a burst of writes
# shares one checkpoint (and its fsync) instead of racing it for the disk call by call.
_SETTLE_SECONDS = 0.2

# The FTS5 tables whose segments merge_text_indexes merges.
TEXT_INDEXES = ("entity_text", "observation_text", "entity_words")

# Pages of merge work per index in one transaction: a write that arrives meanwhile waits
# for one such step, not for a whole level's merge. At 40,000 entities, merging what 15
# batch writes left took steps of 9 ms (38 at most) at 32 pages, 36 ms (212) at 128.
_MERGE_PAGES = 32

# A merge step starts only after this long without a commit from anyone.
_MERGE_PAUSE_SECONDS = 0.05

# How long a merge step waits for another writer's lock before it leaves the merging for later.
_MERGE_LOCK_WAIT_MS = 100


def merge_step(conn: sqlite3.Connection, pages: int = _MERGE_PAGES) -> bool:
    """Merge up to `pages` pages of each full-text index's segments (levels of 8 or more),
    inside the caller's transaction; True while there was merging to do.

    FTS5 counts the rows a 'merge' command wrote in `total_changes`: fewer than two means
    it found nothing to merge.
    """
    worked = False
    for table in TEXT_INDEXES:
        before = conn.total_changes
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (pages,))
        worked = worked or conn.total_changes - before >= 2
    return worked


def merge_text_indexes(conn: sqlite3.Connection) -> bool:
    """One `merge_step` in a write transaction of its own; True while there was merging to do."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        worked = merge_step(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return worked


class Checkpointer:
    """Copies the log of the database at `path` into the file after writes ask for it."""

    def __init__(self, path: str, busy_timeout: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def request(self) -> None:
        """Ask for a checkpoint soon (after a write transaction committed)."""
        with self._lock:
            if self._stopping.is_set():
                return
            if self._thread is None:
                # Started at the first write: a store that only reads never runs a thread.
                self._thread = threading.Thread(target=self._run, name="graphmem-checkpoints", daemon=True)
                self._thread.start()
        self._due.set()

    def close(self) -> None:
        """Stop the thread, after the checkpoint it is running, if any."""
        with self._lock:
            self._stopping.set()
            self._due.set()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        # A checkpoint that fails (a full disk, a file gone) loses nothing: the commits are
        # in the log, and the writer's fallback checkpoint or its close copies them.
        with suppress(sqlite3.Error):
            conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None)
            try:
                conn.execute("PRAGMA synchronous=FULL")
                while True:
                    self._due.wait()
                    if self._stopping.wait(_SETTLE_SECONDS):
                        # Closing the store's own connection checkpoints what is left.
                        return
                    self._due.clear()
                    if self._stopping.is_set():
                        # close() may have set "due" just before the clear above erased it:
                        # it sets "stopping" first, so this sees it, and no wait is left to hang.
                        return
                    self._index_and_merge(conn)
                    # PASSIVE never waits for, nor blocks, a reader or the writer: what it
                    # cannot copy now, the next request copies.
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                conn.close()

    def _index_and_merge(self, conn: sqlite3.Connection) -> None:
        """Index the texts the writes left pending (pending.py), then merge the text indexes,
        a step at a time while nobody writes: a step holds the write lock, and a call that
        finds it taken waits or, in a second transaction, fails."""
        (seen,) = conn.execute("PRAGMA data_version").fetchone()
        while True:
            if self._stopping.wait(_MERGE_PAUSE_SECONDS) or self._due.is_set():
                return
            (version,) = conn.execute("PRAGMA data_version").fetchone()
            if version != seen:
                # Another connection (a call of this process, another process) committed
                # during the pause: the merging waits for the next settled write.
                return
            try:
                # A step that finds the write lock taken gives way at once rather than wait:
                # a close() that joins this thread must not wait out another writer's lock.
                conn.execute(f"PRAGMA busy_timeout = {_MERGE_LOCK_WAIT_MS}")
                if not index_step(conn) and not merge_text_indexes(conn):
                    return
            except sqlite3.OperationalError:
                # Busy past the timeout, or a memory from before migration 0015 opened by
                # another graphmem: the indexing and merging wait for the next settled write.
                return
            (seen,) = conn.execute("PRAGMA data_version").fetchone()
