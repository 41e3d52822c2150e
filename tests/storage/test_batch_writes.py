"""What a batch write costs the call that makes it (issue 17, item 2), counted, not timed.

Wall-clock asserts fail on a shared machine, so these count the rows a call writes, FTS5's
index pages included (each full-text segment page is a row of its `_data` table, and
`total_changes` counts the rows FTS5 writes on the same connection): the work a commit
has to put in the write-ahead log.
"""

from __future__ import annotations

import sqlite3
import statistics
from pathlib import Path

import anyio
import pytest

from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage.sqlite.checkpoints import merge_text_indexes
from graphmem.storage.sqlite.pending import index_step
from graphmem.storage.sqlite.store import SQLiteStore

_TABLES = ("entity_text", "observation_text", "entity_words")


def _batch(call: int) -> list[Entity]:
    return [
        Entity(
            f"batch-{call}-{k}",
            "person",
            tuple(f"fact {n} of {call}-{k}: likes tea, walks {k} dogs, owes {n * k} pounds" for n in range(3)),
        )
        for k in range(100)
    ]


def _segments(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {
            table: conn.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0] for table in _TABLES
        }


def test_a_batch_of_new_entities_leaves_indexing_and_merging_the_texts_out_of_the_call(tmp_path: Path):
    # With FTS5's automerge on, one call in a few paid for merging earlier calls' index
    # segments: several times the pages of its own data, inside the call. Since migration
    # 0015 a call does not index its texts either: it records them as pending.
    path = tmp_path / "memory.db"
    pages = _pages_of_twelve_batches(path)
    side = sqlite3.connect(path, isolation_level=None)
    # Every call writes about what the others write (its rows, their index entries and its
    # pending records), never the earlier calls' segments again: with automerge the tenth
    # wrote 263 pages where the others wrote 74 to 120.
    assert max(pages) < 1.5 * statistics.median(pages), pages
    assert _segments(path) == dict.fromkeys(_TABLES, 0)
    assert _pending(side) == (1200, 3600, 1200)
    side.close()


def _pages_of_twelve_batches(path: Path) -> list[int]:
    """The pages each of twelve 100-entity `create_entities` calls committed, with no background
    thread writing beside them; the memory is left closed."""
    store = SQLiteStore(path)
    store._checkpointer = None  # no background thread: only the calls write
    graph = KnowledgeGraph(store)
    side = sqlite3.connect(path, isolation_level=None)
    pages = []
    for call in range(12):
        # A complete checkpoint lets the next write start the log over: its frames are that call's pages.
        side.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        graph.create_entities(_batch(call))
        pages.append(side.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    side.close()
    store.close()
    return pages


def _pending(conn: sqlite3.Connection) -> tuple[int, ...]:
    """Names, facts and word documents waiting to be indexed."""
    return tuple(
        conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("entity_text_pending", "observation_text_pending", "entity_words_stale")
    )


def test_a_batch_write_commits_far_fewer_pages_than_when_it_indexed_its_texts(tmp_path: Path):
    # Issue 17, item 2: the index entries of a 100-entity batch were most of the pages a
    # call committed (and of SQLite's work). Here the code before migration 0015 committed
    # 74 to 119 pages a call (median 107); since, 38 to 78 (median 71).
    pages = _pages_of_twelve_batches(tmp_path / "memory.db")
    assert statistics.median(pages) < 85, pages


def test_the_text_indexes_are_merged_off_the_request_path(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    store._checkpointer = None  # indexed and merged below, by hand, as the thread would
    graph = KnowledgeGraph(store)
    for call in range(12):
        graph.create_entities(_batch(call))
        with sqlite3.connect(path, isolation_level=None) as conn:
            while index_step(conn):
                pass
    unmerged = _segments(path)
    assert all(count >= 12 for count in unmerged.values()), unmerged
    with sqlite3.connect(path, isolation_level=None) as conn:
        while merge_text_indexes(conn):
            pass
    merged = _segments(path)
    assert all(count < 8 for count in merged.values()), merged
    store.close()
    with sqlite3.connect(path, isolation_level=None) as conn:
        for table in _TABLES:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        # Every entity is still found, by word and by substring.
        assert conn.execute("SELECT count(*) FROM entity_words WHERE entity_words MATCH 'tea'").fetchone() == (1200,)
        assert conn.execute(
            "SELECT count(*) FROM observation_text WHERE observation_text MATCH '\"walks 7 dogs\"'"
        ).fetchone() == (36,)


@pytest.mark.anyio
async def test_a_store_merges_its_text_indexes_once_the_writes_settle(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    graph = KnowledgeGraph(store)
    for call in range(12):
        graph.create_entities(_batch(call))
    with anyio.fail_after(20):
        # The store's own thread indexes them, then merges them a step at a time, after the last write.
        while max(_segments(path).values()) >= 8 or sum(_pending(store._conn)):
            await anyio.sleep(0.05)
    store.close()


def test_an_import_leaves_the_text_indexes_merged(tmp_path: Path):
    # An imported memory may be served with no write to start the background merging.
    # (graphmem import writes through the store's bulk insert, as here.)
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    store._checkpointer = None
    graph = KnowledgeGraph(store)
    for call in range(10):
        graph.create_entities(_batch(call)[:10])
        store.index_pending_texts()  # as the background thread would
    assert all(count >= 10 for count in _segments(path).values())
    with store.write(), store.bulk_insert():
        store.insert_entities(_batch(99))
    store.close()
    assert all(count < 8 for count in _segments(path).values()), _segments(path)
