"""SQLiteStore specifics: the file it creates, its schema version, and its search indexes."""

from __future__ import annotations

import json
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core.errors import SchemaVersionError
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import word_search
from graphmem.storage.base import StoreCounts
from graphmem.storage.migration_scripts import migration_scripts
from graphmem.storage.sqlite import reads as sqlite_reads
from graphmem.storage.sqlite.store import SCHEMA_VERSION, SQLiteStore, _split_sql
from graphmem.storage.words import WordSearch


def test_a_new_memory_file_is_readable_by_its_owner_only(tmp_path: Path):
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_missing_parent_directories_are_created(tmp_path: Path):
    path = tmp_path / "a" / "b" / "memory.db"
    SQLiteStore(path).close()
    assert path.exists()


def test_an_existing_file_keeps_its_mode(tmp_path: Path):
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    path.chmod(0o640)
    SQLiteStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_the_schema_version_is_recorded_and_wal_is_on(tmp_path: Path):
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_memory_from_a_newer_graphmem_is_refused_with_advice(tmp_path: Path):
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaVersionError, match="upgrade graphmem"):
        SQLiteStore(path)


def test_reopening_does_not_migrate_twice(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities([Entity("A", "t", ("x",))])
    store.close()
    reopened = SQLiteStore(path)
    with reopened.read():
        assert reopened.get_entities(["A"]) == [Entity("A", "t", ("x",))]
    reopened.close()


def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path):
    first, second = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    with first.write():
        first.insert_entities([Entity("A", "t")])
    with second.read():
        assert second.existing_names(["A"]) == {"A"}
    first.close()
    second.close()


def _reference_hits(entities: list[Entity], needle: str) -> dict[str, tuple[bool, bool, int]]:
    hits = {}
    for entity in entities:
        in_name, in_type = needle in entity.name.lower(), needle in entity.entity_type.lower()
        count = sum(needle in observation.lower() for observation in entity.observations)
        if in_name or in_type or count:
            hits[entity.name] = (in_name, in_type, count)
    return hits


_TEXT = st.text(alphabet=st.sampled_from("abcABC İßΣσ \"'*-:\u2028é"), max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    entities=st.lists(
        st.builds(Entity, _TEXT, _TEXT, st.lists(_TEXT, max_size=3, unique=True).map(tuple)),
        max_size=6,
        unique_by=lambda e: e.name,
    ),
    needle=_TEXT,
)
def test_find_text_agrees_with_a_plain_lowercase_substring_scan(entities: list[Entity], needle: str):
    store = SQLiteStore(":memory:")
    with store.write():
        store.insert_entities(entities)
    needle = needle.lower()
    with store.read():
        found = {name: (h.in_name, h.in_type, h.observation_hits) for name, h in store.find_text(needle).items()}
    assert found == _reference_hits(entities, needle)
    store.close()


# -- the word index (migration 0002) -------------------------------------------------------


def _version_1_database(path: Path) -> None:
    """A memory written by graphmem before the word index existed."""
    script = (resources.files("graphmem.storage") / "migrations" / "sqlite" / "0001_init.sql").read_text("utf-8")
    conn = sqlite3.connect(path)
    for statement in _split_sql(script):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO entities (id, name, entity_type, name_lc, type_lc, extra) VALUES"
        " (1, 'Bob', 'person', 'bob', 'person', '{\"aliases\": [\"Bobby\"]}'),"
        " (2, 'Acme', 'company', 'acme', 'company', NULL)"
    )
    conn.execute(
        "INSERT INTO observations (entity_id, content, content_lc) VALUES (1, 'Moved to Berlin', 'moved to berlin')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def _plan(query: str) -> WordSearch:
    return word_search([query], limit=10)


def test_opening_an_older_memory_indexes_every_entity_it_holds(tmp_path: Path):
    path = tmp_path / "memory.db"
    _version_1_database(path)
    store = SQLiteStore(path)
    with store.read():
        assert [hit.name for hit in store.search_entities(_plan("who is moving to berlin?")).hits] == ["Bob"]
        assert [hit.name for hit in store.search_entities(_plan("bobby")).hits] == ["Bob"]
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM entity_words").fetchone()[0] == 2
        assert conn.execute("SELECT count(*) FROM entity_words_stale").fetchone()[0] == 0


def test_an_older_memory_gets_its_aliases_indexed_and_kept_current(tmp_path: Path):
    path = tmp_path / "memory.db"
    _version_1_database(path)
    store = SQLiteStore(path)
    with store.read():
        assert store.resolve_names(["Bobby", "Acme", "Nobody"]) == {"Bobby": "Bob", "Acme": "Acme"}
    with store.write():
        store.update_entity("Bob", Entity("Bob", "person", (), {"aliases": ["Rob"]}))
    with store.read():
        assert store.resolve_names(["Bobby", "Rob"]) == {"Rob": "Bob"}
    with store.write():
        store.delete_entities(["Bob"])
    with store.read():
        assert store.resolve_names(["Rob"]) == {}
    store.close()


def test_triggers_only_mark_what_changed_and_the_next_read_rebuilds_it(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    store._checkpointer = None  # no background thread: only the calls index
    with store.write():
        store.insert_entities([Entity("A", "t", ("one",)), Entity("B", "t", ("two",))])
        marked = store._conn.execute("SELECT entity_id FROM entity_words_stale ORDER BY 1").fetchall()
        assert marked == [(1,), (2,)]
    with store.read():
        assert store._conn.execute("SELECT count(*) FROM entity_words_stale").fetchone()[0] == 0
    with store.write():
        store.append_observations("B", ["three"])
        assert store._conn.execute("SELECT entity_id FROM entity_words_stale").fetchall() == [(2,)]
    with store.read():
        assert store._conn.execute("SELECT count(*) FROM entity_words_stale").fetchone()[0] == 0
        documents = store._conn.execute("SELECT rowid, observations FROM entity_words ORDER BY rowid").fetchall()
    assert documents == [(1, "one"), (2, "two\nthree")]
    store.close()


def test_a_change_made_outside_graphmem_is_indexed_at_its_next_write(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities([Entity("A", "t", ("one",))])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE observations SET content = 'zebra', content_lc = 'zebra'")
    with store.write():
        store.insert_entities([Entity("B", "t")])
    with store.read():
        assert [hit.name for hit in store.search_entities(_plan("zebras?")).hits] == ["A"]
    store.close()


def test_many_observations_in_one_call_index_the_entity_once(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities([Entity("A", "t", tuple(f"fact {i}" for i in range(1000)))])
    with store.read():
        (document,) = store._conn.execute("SELECT observations FROM entity_words").fetchone()
        hits = store.search_entities(_plan("fact 999")).hits
    assert document.count("\n") == 999
    assert [hit.name for hit in hits] == ["A"]
    store.close()


def _index_state(store: SQLiteStore) -> dict[str, list[tuple[object, ...]]]:
    """Everything the suspended triggers maintain, plus the triggers themselves, once
    the texts pending are indexed (as the background thread does)."""
    store.index_pending_texts()
    queries = {
        "degrees": "SELECT name, degree FROM degrees ORDER BY name",
        "entity_text": "SELECT rowid FROM entity_text WHERE entity_text MATCH '\"ent\"' ORDER BY rowid",
        "observation_text": "SELECT rowid FROM observation_text WHERE observation_text MATCH '\"act\"' ORDER BY rowid",
        "words": "SELECT rowid, name, observations FROM entity_words ORDER BY rowid",
        "triggers": "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
        "row_counts": "SELECT name, count FROM row_counts ORDER BY name",
        "entity_type_counts": "SELECT entity_type, count FROM entity_type_counts ORDER BY entity_type",
        "relation_type_counts": "SELECT relation_type, count FROM relation_type_counts ORDER BY relation_type",
    }
    with store.read():
        return {key: store._conn.execute(sql).fetchall() for key, sql in queries.items()}


def _fill(store: SQLiteStore, first: int, count: int) -> None:
    store.insert_entities([Entity(f"entity {i}", "t", (f"fact {i}", f"act {i}")) for i in range(first, first + count)])
    store.append_observations(f"entity {first}", ["another fact"])
    store.insert_relations(
        [Relation(f"entity {i}", f"entity {(i * 7) % (first + count)}", "knows") for i in range(first, first + count)]
        + [Relation(f"entity {first}", f"entity {first}", "self")]
    )


def test_a_bulk_insert_leaves_every_index_as_row_by_row_inserts_do(tmp_path: Path):
    plain, bulk = SQLiteStore(tmp_path / "plain.db"), SQLiteStore(tmp_path / "bulk.db")
    for store in (plain, bulk):
        with store.write():
            _fill(store, 0, 30)
    with plain.write():
        _fill(plain, 30, 50)
    with bulk.write(), bulk.bulk_insert():
        _fill(bulk, 30, 50)
    expected = _index_state(plain)
    # "act" is in "fact" too: every observation of the 80 entities, and two "another fact".
    assert expected["degrees"] and len(expected["observation_text"]) == 2 * 80 + 2
    assert _index_state(bulk) == expected
    for table in ("entity_text", "observation_text", "entity_words"):
        bulk._conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    plain.close()
    bulk.close()


class _ImportInterrupted(Exception):
    """What an import half-way through a file may fail with."""


def test_a_failed_bulk_insert_changes_nothing_and_keeps_the_triggers(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        _fill(store, 0, 10)
    before = _index_state(store)
    with pytest.raises(_ImportInterrupted), store.write(), store.bulk_insert():
        _fill(store, 10, 10)
        raise _ImportInterrupted
    assert _index_state(store) == before
    with store.write():
        _fill(store, 10, 5)
    assert len(_index_state(store)["observation_text"]) == 2 * 15 + 2
    store.close()


def test_a_bulk_insert_needs_a_write_transaction(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with pytest.raises(RuntimeError, match="inside write"), store.bulk_insert():
        pass
    store.close()


# -- the counts the triggers keep (migration 0007) -------------------------------------------


def _counted(store: SQLiteStore) -> tuple[object, ...]:
    """What the store reports as counts, beside what counting every row gives."""
    with store.read():
        reported = (store.counts(), store.entity_type_counts(), store.relation_type_counts())
        conn = store._conn
        counted = (
            StoreCounts(*(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _COUNTED_TABLES)),
            conn.execute(
                "SELECT entity_type, count(*) AS n FROM entities GROUP BY entity_type ORDER BY n DESC, entity_type"
            ).fetchall(),
            conn.execute(
                "SELECT relation_type, count(*) AS n FROM relations GROUP BY relation_type"
                " ORDER BY n DESC, relation_type"
            ).fetchall(),
        )
    return reported, counted


_COUNTED_TABLES = ("entities", "relations", "observations")


def test_counts_follow_every_kind_of_change(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        _fill(store, 0, 20)
    with store.write(), store.bulk_insert():
        _fill(store, 20, 20)
    with store.write():
        store.update_entity("entity 3", Entity("entity 3", "renamed type"))
        store.delete_entities(["entity 4", "entity 5", "nobody"])
        store.remove_observations("entity 6", ["fact 6"])
        store.delete_relations([("entity 7", "entity 9", "knows")])
    reported, counted = _counted(store)
    assert reported == counted
    assert reported[0].entities == 38 and reported[0].observations == 82 - 4 - 1
    assert ("renamed type", 1) in reported[1]
    with store.write():
        store.delete_entities([f"entity {i}" for i in range(40)])
    reported, counted = _counted(store)
    assert reported == counted == (StoreCounts(0, 0, 0), [], [])
    store.close()


def test_a_page_reports_the_total_of_its_type(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities([Entity(f"e{i}", "even" if i % 2 == 0 else "odd") for i in range(9)])
    with store.read():
        assert store.page_entities(None, 0, 2)[1] == 9
        assert store.page_entities("even", 0, 2)[1] == 5
        assert store.page_entities("none", 0, 2) == ([], 0)
    store.close()


def _version_6_database(path: Path) -> None:
    """A memory written by graphmem before the counts were kept."""
    conn = sqlite3.connect(path)
    folder = resources.files("graphmem.storage") / "migrations" / "sqlite"
    for number in range(1, 7):
        (script,) = [item for item in folder.iterdir() if item.name.startswith(f"{number:04d}_")]
        for statement in _split_sql(script.read_text("utf-8")):
            conn.execute(statement)
    conn.execute(
        "INSERT INTO entities (name, entity_type, name_lc, type_lc) VALUES"
        " ('Bob', 'person', 'bob', 'person'), ('Ann', 'person', 'ann', 'person'),"
        " ('Acme', 'company', 'acme', 'company')"
    )
    conn.execute("INSERT INTO observations (entity_id, content, content_lc) VALUES (1, 'Likes tea', 'likes tea')")
    conn.execute(
        "INSERT INTO relations (from_name, to_name, relation_type) VALUES"
        " ('Bob', 'Acme', 'works_at'), ('Ann', 'Acme', 'works_at'), ('Bob', 'Ann', 'knows')"
    )
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()


def test_opening_an_older_memory_counts_what_it_holds(tmp_path: Path):
    path = tmp_path / "memory.db"
    _version_6_database(path)
    store = SQLiteStore(path)
    with store.read():
        assert store.counts() == StoreCounts(3, 3, 1)
        assert store.entity_type_counts() == [("person", 2), ("company", 1)]
        assert store.relation_type_counts() == [("works_at", 2), ("knows", 1)]
    with store.write():
        store.delete_entities(["Ann"])
    with store.read():
        assert store.counts() == StoreCounts(2, 1, 1)
        assert store.relation_type_counts() == [("works_at", 1)]
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_every_text_index_merges_its_segments_eight_to_a_level_new_or_migrated(tmp_path: Path):
    # FTS5's default of four made one write in twenty pay for a merge (see migration 0009).
    old = tmp_path / "old.db"
    _version_6_database(old)
    for path in (tmp_path / "new.db", old):
        SQLiteStore(path).close()
        with sqlite3.connect(path) as conn:
            for table in ("entity_text", "observation_text", "entity_words"):
                assert conn.execute(f"SELECT v FROM {table}_config WHERE k = 'usermerge'").fetchone() == (8,)
                # Merged off the request path (migration 0014).
                assert conn.execute(f"SELECT v FROM {table}_config WHERE k = 'automerge'").fetchone() == (0,)
            # The search still finds what was there before.
            if path == old:
                assert conn.execute("SELECT rowid FROM entity_words WHERE entity_words MATCH 'tea'").fetchall() == [
                    (1,)
                ]


def test_pages_are_the_same_slices_before_and_after_gaps_in_the_ids(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    names = [f"e{i}" for i in range(12)]
    with store.write():
        store.insert_entities([Entity(name, "t") for name in names])
    for deleted in ([], ["e0"], ["e11"], ["e5", "e6"]):
        with store.write():
            store.delete_entities(deleted)
        names = [name for name in names if name not in deleted]
        with store.read():
            for offset in (0, 1, 3, len(names) - 1, len(names), len(names) + 5):
                page, total = store.page_entities(None, offset, 3)
                assert [entity.name for entity in page] == names[offset : offset + 3]
                assert total == len(names)
    store.close()


# -- checkpoints off the request path ------------------------------------------------------


def _in_the_database_file(path: Path) -> set[str]:
    """Entity names in the database file itself, ignoring the write-ahead log."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM entities")}
    except sqlite3.OperationalError:
        return set()  # not even the schema has been copied yet
    finally:
        conn.close()


def test_a_commit_leaves_the_log_to_a_background_checkpoint_that_copies_it_soon(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    # The writer's own checkpoint only bounds the log; it no longer runs every 1,000 pages.
    assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] > 1000
    with store.write():
        store.insert_entities([Entity("A", "t", ("x",))])
    deadline = time.monotonic() + 5
    while "A" not in _in_the_database_file(path):
        assert time.monotonic() < deadline, "the background checkpoint never copied the commit"
        time.sleep(0.02)
    store.close()


def test_closing_a_store_checkpoints_what_the_thread_had_not_copied(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    with store.write():
        store.insert_entities([Entity("A", "t")])
    store.close()
    assert _in_the_database_file(path) == {"A"}
    assert not (tmp_path / "memory.db-wal").exists()


def _official_names(store: SQLiteStore) -> list[str]:
    with store.read():
        wire = store.official_graph(100)
    assert wire is not None
    return [entity["name"] for entity in wire["entities"]]


def test_the_official_graph_follows_writes_from_this_and_other_connections(tmp_path: Path):
    mine, other = SQLiteStore(tmp_path / "memory.db"), SQLiteStore(tmp_path / "memory.db")
    with mine.write():
        mine.insert_entities([Entity("A", "t")])
    assert _official_names(mine) == ["A"]
    assert _official_names(mine) == ["A"]  # answered again, unchanged
    with mine.write():
        mine.insert_entities([Entity("B", "t")])
    assert _official_names(mine) == ["A", "B"]
    with other.write():
        other.insert_entities([Entity("C", "t")])
    assert _official_names(mine) == ["A", "B", "C"]
    mine.close()
    other.close()


def _official_relations(store: SQLiteStore) -> list[tuple[str, str, str]]:
    with store.read():
        wire = store.official_graph(100)
    assert wire is not None
    return [(relation["from"], relation["to"], relation["relationType"]) for relation in wire["relations"]]


def test_the_official_graph_s_relations_follow_every_relation_write_of_any_connection(tmp_path: Path):
    # After a write to entities only, the official graph keeps the relations it read
    # (migration 0010 counts the relations' writes); any write to a relation reads them again.
    mine, other = SQLiteStore(tmp_path / "memory.db"), SQLiteStore(tmp_path / "memory.db")
    with mine.write():
        mine.insert_entities([Entity("A", "t"), Entity("B", "t")])
        mine.insert_relations([Relation("A", "B", "knows")])
    assert _official_relations(mine) == [("A", "B", "knows")]
    with mine.write():
        mine.append_observations("A", ["likes tea"])
    assert _official_relations(mine) == [("A", "B", "knows")]
    with mine.read():
        assert mine.official_graph(100)["entities"][0]["observations"] == ["likes tea"]  # type: ignore[index]
    with other.write():
        other.insert_relations([Relation("B", "A", "knows")])
    assert _official_relations(mine) == [("A", "B", "knows"), ("B", "A", "knows")]
    with other.write():
        other.delete_relations([("A", "B", "knows")])
    assert _official_relations(mine) == [("B", "A", "knows")]
    with other.write():
        other._conn.execute("UPDATE relations SET relation_type = 'likes'")  # as a rename of a type does
    assert _official_relations(mine) == [("B", "A", "likes")]
    with mine.write(), mine.bulk_insert():
        mine.insert_relations([Relation("A", "A", "is")])
    assert _official_relations(mine) == [("B", "A", "likes"), ("A", "A", "is")]
    with other.write():
        other.delete_entities(["A"])
    assert _official_relations(mine) == []
    mine.close()
    other.close()


def test_a_bulk_import_by_another_connection_does_not_fail_this_one_s_next_delete(tmp_path: Path):
    # A bulk insert drops and recreates the row triggers. SQLite 3.40 then failed the first
    # DELETE of another connection that had loaded the schema with "no such table:
    # observations": a server's delete_entities right after `graphmem import` into its file.
    setup = SQLiteStore(tmp_path / "memory.db")
    with setup.write():
        setup.insert_entities([Entity("A", "t", ("fact",)), Entity("B", "t")])
    setup.close()
    # An existing memory: both read its schema from the file. The server waits for a call.
    server, importer = SQLiteStore(tmp_path / "memory.db"), SQLiteStore(tmp_path / "memory.db")
    with importer.write(), importer.bulk_insert():
        importer.insert_entities([Entity("C", "t", ("imported",))])
    with server.write():
        assert server.delete_entities(["A"]) == 1
    with server.read():
        assert [entity.name for entity in server.iter_entities()] == ["B", "C"]
    server.close()
    importer.close()


def test_the_official_graph_read_inside_a_write_that_rolls_back_is_not_kept(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities([Entity("A", "t")])
    assert _official_names(store) == ["A"]
    with pytest.raises(_ImportInterrupted), store.write():
        store.insert_entities([Entity("Gone", "t")])
        assert [e["name"] for e in (store.official_graph(100) or {"entities": []})["entities"]] == ["A", "Gone"]
        raise _ImportInterrupted
    assert _official_names(store) == ["A"]
    store.close()


def test_the_name_type_and_alias_indexes_follow_real_changes_only(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities([Entity("Alice Smith", "person", ("likes tea",), {"aliases": ["Ali"]})])
    # A rewrite of the row with the same name, type and aliases (what an observation write does).
    with store.write():
        store.update_entity("Alice Smith", Entity("Alice Smith", "person", (), {"aliases": ["Ali"], "version": 2}))
    with store.read():
        assert set(store.find_text("ice smi")) == {"Alice Smith"}
        assert store.resolve_names(["Ali"]) == {"Ali": "Alice Smith"}
    with store.write():
        store.update_entity("Alice Smith", Entity("Alicia Smith", "author", (), {"aliases": ["Lissy"], "version": 3}))
    with store.read():
        assert store.find_text("ice smi") == {}
        assert set(store.find_text("icia smi")) == {"Alicia Smith"}
        assert set(store.find_text("autho")) == {"Alicia Smith"}
        assert store.resolve_names(["Ali", "Lissy"]) == {"Lissy": "Alicia Smith"}
        assert store.entity_type_counts() == [("author", 1)]
    store.close()


def test_a_new_type_under_the_same_name_moves_the_entity_to_that_type(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities([Entity("Alice Smith", "person", ("likes tea",)), Entity("Bob", "person")])
    with store.write():
        store.update_entity("Alice Smith", Entity("Alice Smith", "Author", (), {"version": 2}))
    with store.read():
        assert store.get_entities(["Alice Smith"]) == [Entity("Alice Smith", "Author", ("likes tea",), {"version": 2})]
        assert set(store.find_text("ice smi")) == {"Alice Smith"}
        assert set(store.find_text("autho")) == {"Alice Smith"}
        assert "Bob" not in store.find_text("autho")
        assert store.entity_type_counts() == [("Author", 1), ("person", 1)]
        assert [entity.name for entity in store.page_entities("Author", 0, None)[0]] == ["Alice Smith"]
        assert [entity.name for entity in store.page_entities("person", 0, None)[0]] == ["Bob"]
    store.close()


def test_an_update_of_an_entity_that_does_not_exist_changes_nothing(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities([Entity("Alice", "person")])
    with store.write():
        store.update_entity("Nobody", Entity("Nobody", "ghost", (), {"version": 2}))
    with store.read():
        assert list(store.iter_entities()) == [Entity("Alice", "person")]
        assert store.entity_type_counts() == [("person", 1)]
    store.close()


@pytest.mark.parametrize(
    ("needle", "found"),
    [
        ("#4321-1", ["tag", "longer tag"]),
        (" run ", ["runner"]),
        (" running ", ["late"]),
        (".net core", ["dotnet"]),
        ("a-b", ["pair"]),
    ],
)
def test_the_whole_query_search_finds_every_text_holding_a_needle_with_a_word_inside(
    tmp_path: Path, needle: str, found: list[str]
):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.write():
        store.insert_entities(
            [
                Entity("tag", "t", ("see #4321-1 here",)),
                Entity("longer tag", "t", ("x#4321-10",)),
                Entity("other tag", "t", ("#43210-1", "#4321")),
                Entity("runner", "t", ("they run fast",)),
                Entity("late", "t", ("i was running late",)),
                Entity("dotnet", "t", ("Uses .NET Core 8",)),
                Entity("pair", "t", ("a-b",)),
            ]
        )
    with store.read():
        hits = store.search_entities(replace(word_search([needle]), max_word_matches=0)).hits
    assert sorted(hit.name for hit in hits if hit.official) == sorted(found)
    store.close()


_TEXT = st.text(alphabet="ab1 -#.", min_size=0, max_size=12)
# Names and a type made of letters the texts never use, so only the texts can match.
_NAMES = "uvwxyzqr"


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=8), start=st.integers(0, 11), length=st.integers(1, 6))
def test_whole_query_matches_are_exactly_the_texts_containing_the_query(texts: list[str], start: int, length: int):
    # The needle is cut from one of the texts, so most examples find something.
    source = texts[0]
    needle = source[start : start + length] or "a"
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "memory.db")
        with store.write():
            store.insert_entities([Entity(_NAMES[i], "t", (text or "-",)) for i, text in enumerate(texts)])
        with store.read():
            hits = store.search_entities(replace(word_search([needle]), max_word_matches=0)).hits
        store.close()
    expected = {_NAMES[i] for i, text in enumerate(texts) if needle.lower() in (text or "-").lower()}
    assert {hit.name for hit in hits if hit.official} == expected


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=8, unique=True), start=st.integers(0, 11), length=st.integers(1, 6))
def test_whole_query_matches_in_names_and_types_are_exactly_those_containing_the_query(
    texts: list[str], start: int, length: int
):
    # As above, with the texts as names (and the first one also as every entity's type).
    source = texts[0]
    needle = source[start : start + length] or "a"
    names = [text or "-" for text in texts]
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "memory.db")
        with store.write():
            store.insert_entities([Entity(name, "t" if i else name, ()) for i, name in enumerate(dict.fromkeys(names))])
        with store.read():
            hits = store.search_entities(replace(word_search([needle]), max_word_matches=0)).hits
        store.close()
    expected = {name for name in names if needle.lower() in name.lower()}
    if needle.lower() in names[0].lower():
        expected.add(names[0])
    assert {hit.name for hit in hits if hit.official} == expected


def test_a_name_ending_in_a_number_finds_every_name_containing_it(tmp_path: Path):
    # The number is looked up as the start of a word in the word index, not by trigrams.
    store = SQLiteStore(tmp_path / "memory.db")
    names = ["entity-123", "entity-1230", "entity-12345", "xentity-123", "entity-0123", "entity-12", "entity 123"]
    with store.write():
        store.insert_entities([Entity(name, "t") for name in names] + [Entity(f"other-{i}", "t") for i in range(500)])
    with store.read():
        hits = store.search_entities(replace(word_search(["entity-123"]), max_word_matches=0)).hits
    assert {hit.name for hit in hits if hit.official} == {"entity-123", "entity-1230", "entity-12345", "xentity-123"}
    store.close()


def test_a_needle_whose_word_is_in_many_entities_still_finds_exactly_the_texts_holding_it(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    texts = [f"tag 0 of item {i}" for i in range(300)]
    with store.write():
        store.insert_entities([Entity(f"entity {i}", "t", (text,)) for i, text in enumerate(texts)])
    needle = " 0 of item 7"  # "item" is its longest whole word, and every entity holds it
    with store.read():
        hits = store.search_entities(replace(word_search([needle]), max_word_matches=0)).hits
    assert {hit.name for hit in hits} == {f"entity {i}" for i, text in enumerate(texts) if needle in text}
    assert len(hits) == 11  # item 7 and items 70 to 79
    store.close()


# -- texts with NUL (migration 0012) -----------------------------------------------------------


def test_opening_an_older_memory_with_nul_in_its_texts_finds_them_exactly(tmp_path: Path):
    # Before 0012 the trigram index held "nul\0name" as "nul", and the alias index "al\0ias" as "al".
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path)
    folder = resources.files("graphmem.storage") / "migrations" / "sqlite"
    for number in range(1, 11):
        (script,) = [item for item in folder.iterdir() if item.name.startswith(f"{number:04d}_")]
        for statement in _split_sql(script.read_text("utf-8")):
            conn.execute(statement)
    name, alias = "nul\x00name", "al\x00ias"
    conn.execute(
        "INSERT INTO entities (name, entity_type, name_lc, type_lc, extra)"
        " VALUES (?1, 't', ?1, 't', ?2), ('nul', 't', 'nul', 't', NULL)",
        (name, json.dumps({"aliases": [alias, "\\u0000 plain"]}, ensure_ascii=False)),
    )
    conn.execute("INSERT INTO observations (entity_id, content, content_lc) VALUES (1, ?1, ?1)", ("a\x00tail",))
    conn.execute("PRAGMA user_version = 10")
    conn.commit()
    conn.close()

    store = SQLiteStore(path)
    with store.read():
        assert store.resolve_names([alias, "al", "\\u0000 plain"]) == {alias: name, "\\u0000 plain": name}
        assert set(store.find_text("name")) == {name}
        assert set(store.find_text("tail")) == {name}
        assert set(store.find_text("l\x00n")) == {name}
    with store.write():
        store.delete_entities([name])
    with store.read():
        assert store.find_text("nul").keys() == {"nul"}
        assert store.resolve_names([alias]) == {}
    store.close()


def _statements_of(store: SQLiteStore, write: Callable[[str, int], object], tag: str, size: int) -> int:
    """How many SQL statements `write(tag, size)` runs on the store's connection, not counting what triggers do."""
    run: set[str] = set()
    # The trace shows each statement with its values; SQLite's own statements inside a
    # virtual table start with "--", and each trigger program run shows its statement again.
    store._conn.set_trace_callback(lambda sql: None if sql.startswith("--") else run.add(sql))
    try:
        write(tag, size)
    finally:
        store._conn.set_trace_callback(None)
    return len(run)


def test_a_batch_write_runs_as_many_statements_for_100_items_as_for_one(tmp_path: Path):
    # Issue 17 item 2: a statement writing an FTS5 table writes a new index segment when
    # it ends, so a row at a time made a 100-entity create_entities take 50 ms.
    store = SQLiteStore(tmp_path / "memory.db")
    graph = KnowledgeGraph(store)

    def entities(tag: str, size: int) -> list[Entity]:
        return [Entity(f"{tag} {k}", "t", (f"fact {k}", f"more {k}")) for k in range(size)]

    def relations(tag: str, size: int) -> list[Relation]:
        return [Relation(f"{tag} {k}", f"{tag} {k + 1}", "next") for k in range(size)]

    def additions(tag: str, size: int) -> list[ObservationAddition]:
        return [ObservationAddition(f"{tag} {k}", (f"added {k}",)) for k in range(size)]

    for write in (
        lambda tag, size: graph.create_entities(entities(tag, size)),
        lambda tag, size: graph.create_relations(relations(tag, size)),
        lambda tag, size: graph.add_observations(additions(tag, size)),
    ):
        write("first", 1)  # SQLite reads the FTS5 tables' settings on first use
        assert _statements_of(store, write, "one", 1) == _statements_of(store, write, "many", 100)
    store.close()


def test_most_connected_walks_the_degree_index_for_a_common_type_and_agrees_with_sorting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    store = SQLiteStore(tmp_path / "m.db")
    with store.write():
        store.insert_entities([Entity(f"e{index:02d}", "common" if index % 3 else "rare") for index in range(30)])
        store.insert_relations([Relation(f"e{index:02d}", f"e{index * 7 % 30:02d}", "r") for index in range(0, 30, 2)])
    with store.read():
        sorted_pages = [store.most_connected("common", offset, 3) for offset in range(0, 24, 3)]
        monkeypatch.setattr(sqlite_reads, "_FEW_OF_A_TYPE", 0)
        walked_pages = [store.most_connected("common", offset, 3) for offset in range(0, 24, 3)]
    store.close()
    assert walked_pages == sorted_pages
    assert sum(len(page) for page in walked_pages) == 20


# -- projects (migration 0017) ----------------------------------------------------------------


def _version_16_database(path: Path) -> None:
    """A memory as graphmem left it before projects: two entities, facts, an alias, a relation."""
    conn = sqlite3.connect(path)
    for number, script in migration_scripts("sqlite"):
        if number <= 16:
            for statement in _split_sql(script):
                conn.execute(statement)
    conn.execute(
        "INSERT INTO entities (id, name, entity_type, name_lc, type_lc, extra) VALUES"
        " (1, 'Bob', 'person', 'bob', 'person', '{\"aliases\": [\"Bobby\"]}'),"
        " (3, 'Acme', 'company', 'acme', 'company', NULL)"
    )
    conn.execute(
        "INSERT INTO observations (entity_id, content, content_lc) VALUES"
        " (1, 'Moved to Berlin', 'moved to berlin'), (3, 'Makes anvils', 'makes anvils')"
    )
    conn.execute("INSERT INTO relations (from_name, to_name, relation_type) VALUES ('Bob', 'Acme', 'works_at')")
    conn.execute("PRAGMA user_version = 16")
    conn.commit()
    conn.close()


def test_a_memory_from_before_projects_keeps_everything_in_the_shared_space(tmp_path: Path):
    path = tmp_path / "memory.db"
    _version_16_database(path)
    store = SQLiteStore(path)
    with store.read():
        bob, acme = store.get_entities(["Bob", "Acme"])
        assert (bob.observations, acme.observations) == (("Moved to Berlin",), ("Makes anvils",))
        assert (bob.project, acme.project) == ("", "")
        assert store.resolve_names(["Bobby"]) == {"Bobby": "Bob"}
        assert [relation.key for relation in store.iter_relations()] == [("Bob", "Acme", "works_at")]
        assert [hit.name for hit in store.search_entities(_plan("who moved to berlin?")).hits] == ["Bob"]
    with store.write():
        # Ids go on from where they were, and the constraints hold as before within a project.
        store.insert_entities([Entity("Carol", "person")])
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT id FROM entities WHERE name = 'Carol'").fetchone() == (4,)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO entities (name, entity_type, name_lc, type_lc) VALUES ('Bob', 'x', 'bob', 'x')")
        conn.execute(
            "INSERT INTO entities (name, entity_type, name_lc, type_lc, project) VALUES ('Bob', 'x', 'bob', 'x', 'api')"
        )
