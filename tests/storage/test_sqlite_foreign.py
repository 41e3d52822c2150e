"""Which SQLite files graphmem makes a memory in: its own, new or empty ones, never another
application's database (issue 27, item 11)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.core.errors import MemoryOpenError
from graphmem.core.models import Entity
from graphmem.storage import open_checked_store
from graphmem.storage.sqlite import projects_schema
from graphmem.storage.sqlite.schema import _migrations, _split_sql
from graphmem.storage.sqlite.store import SCHEMA_VERSION, SQLiteStore


def _their_database(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.close()


def _tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    conn.close()
    return [name for (name,) in rows]


def test_another_application_s_database_is_refused_and_left_as_it_was(tmp_path: Path):
    path = tmp_path / "their.db"
    _their_database(path)
    before = path.read_bytes()
    with pytest.raises(MemoryOpenError) as refused:
        SQLiteStore(path)
    assert str(refused.value) == (
        f"Cannot open the memory at {path}: the database holds 2 other tables and no graphmem memory. "
        "Check the path; a new memory needs a new or empty file (choose one with --memory-file or MEMORY_FILE_PATH)."
    )
    assert path.read_bytes() == before
    assert _tables(path) == ["customers", "invoices"]
    assert not Path(f"{path}-wal").exists()


def test_another_application_s_database_is_refused_read_only_too(tmp_path: Path):
    path = tmp_path / "their.db"
    _their_database(path)
    with pytest.raises(MemoryOpenError, match="2 other tables and no graphmem memory"):
        SQLiteStore(path, read_only=True)


def test_a_database_that_sets_a_schema_version_of_its_own_is_still_refused(tmp_path: Path):
    path = tmp_path / "their.db"
    _their_database(path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 3")
    conn.close()
    with pytest.raises(MemoryOpenError, match="no graphmem memory"):
        SQLiteStore(path)
    assert _tables(path) == ["customers", "invoices"]


def test_a_server_start_on_another_application_s_database_stops_with_that_line(tmp_path: Path):
    path = tmp_path / "their.db"
    _their_database(path)
    with pytest.raises(MemoryOpenError, match="other tables and no graphmem memory"):
        open_checked_store(Settings(memory_path=path))


@pytest.mark.parametrize("kind", ["new", "empty"])
def test_a_new_or_empty_file_becomes_a_memory(tmp_path: Path, kind: str):
    path = tmp_path / "memory.db"
    if kind == "empty":
        path.write_bytes(b"")
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities([Entity(name="Ada", entity_type="person", observations=["Wrote a program"])])
    with store.read():
        assert store.counts().entities == 1
    store.close()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_graphmem_s_own_memory_of_every_schema_version_opens(tmp_path: Path, version: int):
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, script in _migrations():
        if number <= version:
            if number == projects_schema.MIGRATION:
                # The part of migration 17 that SQL cannot say, as the store runs it.
                projects_schema.give_tables_projects(conn)
            for statement in _split_sql(script):
                conn.execute(statement)
    conn.execute("INSERT INTO entities (name, entity_type, name_lc, type_lc) VALUES ('Ada', 'person', 'ada', 'person')")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    store = SQLiteStore(path)
    with store.read():
        assert [entity.name for entity in store.get_entities(["Ada"])] == ["Ada"]
    store.close()
