"""Texts a write left for the background indexing (migration 0015): searched exactly at once,
indexed soundly later, never lost."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import word_search
from graphmem.storage.sqlite import store as sqlite_store
from graphmem.storage.sqlite.store import SQLiteStore

_PENDING_TABLES = ("entity_text_pending", "observation_text_pending", "entity_words_stale")


def _quiet_store(path: Path) -> SQLiteStore:
    """A store whose background thread never runs: what its writes leave pending stays so."""
    store = SQLiteStore(path)
    store._checkpointer = None
    return store


def _pending(path: Path) -> tuple[int, ...]:
    with sqlite3.connect(path) as conn:
        return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in _PENDING_TABLES)


def _fill(graph: KnowledgeGraph, first: int, count: int) -> None:
    for start in range(first, first + count, 500):
        graph.create_entities(
            [
                Entity(
                    f"Entity-{i}",
                    ("person", "project")[i % 2],
                    (f"likes tea #{i}", f"walks {i % 7} dogs", f"tag-{i % 13}-x"),
                )
                for i in range(start, min(start + 500, first + count))
            ]
        )


def _answers(store: SQLiteStore, queries: list[str]) -> list[object]:
    answers: list[object] = []
    with store.read():
        for query in queries:
            for entity_type in (None, "person"):
                for offset, limit in ((0, 10), (995, 10), (0, None)):
                    search = word_search([query], entity_type=entity_type, limit=limit, offset=offset)
                    answers.append(store.search_entities(search))
                    answers.append(store.search_entities(replace(search, named_at_most=5)))
            answers.append(sorted(store.find_text(query).items()))
    return answers


def test_a_search_right_after_a_write_answers_as_it_will_once_the_texts_are_indexed(tmp_path: Path):
    # More than RANKED_AT_MOST (2,000) entities hold "tea": newest first, pending ones first.
    queries = ["tea", "likes tea #2499", "entity-24", "walks 3 dogs", "-7-x", "project", "dogs tea", "#1"]
    waiting, indexed = _quiet_store(tmp_path / "waiting.db"), _quiet_store(tmp_path / "indexed.db")
    for store in (waiting, indexed):
        graph = KnowledgeGraph(store)
        _fill(graph, 0, 1500)
        store.index_pending_texts()
        _fill(graph, 1500, 1000)
    indexed.index_pending_texts()
    # No read yet: the word documents are pending too (a read would bring them up to date).
    assert _pending(tmp_path / "waiting.db") == (1000, 3000, 1000)
    assert _answers(waiting, queries) == _answers(indexed, queries)
    assert _pending(tmp_path / "waiting.db")[:2] == (1000, 3000)  # reads never index the trigrams
    waiting.close()
    indexed.close()


def test_names_and_facts_changed_or_deleted_before_they_are_indexed_leave_the_indexes_sound(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = _quiet_store(path)
    graph = KnowledgeGraph(store)
    _fill(graph, 0, 20)
    store.index_pending_texts()
    _fill(graph, 20, 20)
    # Pending and indexed rows alike: renamed, retyped, facts removed and added, deleted.
    for name in ("Entity-3", "Entity-23"):
        with store.write():
            store.update_entity(name, Entity(f"Renamed {name}", "company"))
    with store.write():
        store.remove_observations("Entity-4", ["likes tea #4"])
        store.remove_observations("Entity-24", ["likes tea #24"])
        store.append_observations("Entity-25", ["plays zither"])
        store.append_observations("Entity-5", ["plays zither"])
        store.delete_entities(["Entity-6", "Entity-26"])
    with store.read():
        found = store.find_text("renamed")
        assert sorted(found) == ["Renamed Entity-23", "Renamed Entity-3"]
        assert sorted(store.find_text("zither")) == ["Entity-25", "Entity-5"]
        assert not {"Entity-4", "Entity-24"} & set(store.find_text("likes tea #4"))
        assert not {"Entity-6", "Entity-26"} & set(store.find_text("entity-"))
        assert sorted(store.find_text("company")) == ["Renamed Entity-23", "Renamed Entity-3"]
    before = [sorted(store.find_text(needle).items()) for needle in ("renamed", "zither", "tea #2", "company")]
    store.index_pending_texts()
    assert _pending(path) == (0, 0, 0)
    with store.read():
        assert [sorted(store.find_text(needle).items()) for needle in ("renamed", "zither", "tea #2", "company")] == (
            before
        )
    for table in ("entity_text", "observation_text", "entity_words"):
        # FTS5 checks its index against the rows it indexes: a term deleted that it never
        # held, or one left behind, fails this.
        store._conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    store.close()


def test_a_write_that_finds_too_much_pending_indexes_it_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A flood of writes with no pause for the background thread: the searches' share of
    # pending rows stays bounded.
    monkeypatch.setattr(sqlite_store, "TEXT_LIMIT", 50)
    path = tmp_path / "memory.db"
    graph = KnowledgeGraph(_quiet_store(path))
    _fill(graph, 0, 10)
    assert _pending(path) == (10, 30, 10)
    _fill(graph, 10, 10)
    assert _pending(path) == (0, 0, 0)
    graph.store.close()


def test_a_read_brings_the_word_index_up_to_date_and_a_read_only_one_still_finds_every_substring(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = _quiet_store(path)
    _fill(KnowledgeGraph(store), 0, 30)
    reader = SQLiteStore(path, read_only=True)
    with reader.read():
        # "#17" is a word of its own: narrowed by the word index, which does not hold it yet.
        hits = reader.search_entities(word_search(["tea #17"])).hits
    assert [hit.name for hit in hits if hit.official] == ["Entity-17"]
    assert _pending(path)[2] == 30
    with store.read():
        pass
    assert _pending(path) == (30, 90, 0)
    reader.close()
    store.close()


_WRITE_AND_DIE = """
import os, sys
from graphmem.core.models import Entity
from graphmem.storage.sqlite.store import SQLiteStore
store = SQLiteStore(sys.argv[1])
with store.write():
    store.insert_entities([Entity("Zed", "person", ("likes quinces",))])
os._exit(0)  # no close, no background indexing: as if killed right after the call answered
"""


@pytest.mark.anyio
async def test_what_a_process_left_pending_when_it_died_is_found_and_then_indexed(tmp_path: Path):
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    subprocess.run([sys.executable, "-c", _WRITE_AND_DIE, str(path)], check=True, timeout=60)
    assert _pending(path) == (1, 1, 1)
    store = SQLiteStore(path)
    with store.read():
        assert list(store.find_text("quince")) == ["Zed"]
        assert [hit.name for hit in store.search_entities(word_search(["quinces"])).hits] == ["Zed"]
    KnowledgeGraph(store).create_entities([Entity("Amy", "person")])
    with anyio.fail_after(10):
        # The store's background thread indexes what is pending after that write.
        while sum(_pending(path)):
            await anyio.sleep(0.02)
    with store.read():
        assert list(store.find_text("quince")) == ["Zed"]
    store.close()
