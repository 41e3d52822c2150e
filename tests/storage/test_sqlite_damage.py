"""A SQLite memory whose header is intact and whose pages are damaged (issue 27, item 12):
start-up refuses it in one line, and a call that meets damage later says what to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.cli import cli
from graphmem.config import Settings
from graphmem.core.errors import MemoryOpenError, StorageError
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_checked_store
from graphmem.storage.sqlite.store import SQLiteStore


def damaged_memory(path: Path) -> None:
    """A memory of 3,000 entities whose entities table has every leaf page overwritten: the
    header, the schema and the counts still read, as they did in the outside report."""
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities(
            [Entity(name=f"Entity {i}", entity_type="thing", observations=[f"fact {i}"]) for i in range(3000)]
        )
    store.close()
    with sqlite3.connect(path) as conn:
        try:
            pages = [
                page
                for (page,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'entities' AND pagetype = 'leaf'")
            ]
        except sqlite3.OperationalError as error:
            pytest.skip(f"this SQLite has no dbstat table to find the entities' pages ({error})")
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with open(path, "r+b") as file:
        for page in pages:
            file.seek((page - 1) * page_size)
            file.write(bytes(range(256)) * (page_size // 256))


def test_opening_a_damaged_memory_to_serve_it_stops_saying_the_database_is_damaged(tmp_path: Path):
    path = tmp_path / "memory.db"
    damaged_memory(path)
    with pytest.raises(MemoryOpenError) as refused:
        open_checked_store(Settings(memory_path=path))
    message = str(refused.value)
    assert message.startswith(f"Cannot open the memory at {path}: the database is damaged (")
    assert "\n" not in message


def test_stats_on_a_damaged_memory_exits_1_in_one_line(tmp_path: Path):
    path = tmp_path / "memory.db"
    damaged_memory(path)
    result = CliRunner().invoke(cli, ["stats", "-f", str(path)])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1, result.output
    assert "the database is damaged" in result.output


def test_export_of_a_damaged_memory_still_opens_it_to_read_what_is_intact(tmp_path: Path):
    path = tmp_path / "memory.db"
    damaged_memory(path)
    result = CliRunner().invoke(cli, ["export", "-f", str(path)])
    # Its entities are gone, so the export fails, but on reading them, not at the open.
    assert "Cannot open the memory" not in result.output
    assert "The memory database is damaged" in result.output


def test_a_call_that_meets_damaged_pages_says_so_and_what_to_do_in_one_line(tmp_path: Path):
    path = tmp_path / "memory.db"
    damaged_memory(path)
    store = SQLiteStore(path)  # opened unchecked, as a check that stopped short of the damage leaves it
    graph = KnowledgeGraph(store)
    with pytest.raises(StorageError) as failed:
        graph.open_nodes(["Entity 7"])
    store.close()
    message = str(failed.value)
    assert message.startswith("The memory database is damaged (database disk image is malformed); nothing was changed.")
    assert "backup" in message and "graphmem export" in message and "docs/operations.md" in message
    assert "\n" not in message


def test_an_intact_memory_passes_the_check_at_start(tmp_path: Path):
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    open_checked_store(Settings(memory_path=path)).close()
