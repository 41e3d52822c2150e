"""What makes a search in one project read what the project holds (migration 18): the trigram
indexes hold each project's texts after a mark of its own (the shared space's without), and
each project has a word index of its own (storage/sqlite/project_words.py); every one of
them exact through every kind of change."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from graphmem.core.models import Entity
from graphmem.core.projects import EVERY, SHARED, Scope
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import word_search
from graphmem.storage.migration_scripts import migration_scripts
from graphmem.storage.sqlite import projects_schema
from graphmem.storage.sqlite.schema import _split_sql
from graphmem.storage.sqlite.store import SQLiteStore

_INDEXES = {
    "entity_text": ("entities", "entity_text_pending", ("name_lc", "type_lc")),
    "observation_text": ("observations", "observation_text_pending", ("content_lc",)),
}


def _quiet_store(path: Path) -> SQLiteStore:
    """A store whose background thread never runs: what its writes leave pending stays so."""
    store = SQLiteStore(path)
    store._checkpointer = None
    return store


def _marks(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT project, mark FROM project_marks"))


def _expected_documents(conn: sqlite3.Connection, table: str) -> list[tuple[int, ...]]:
    """What `table` should hold, worked out here: every row not pending, its first column after
    its project's mark (none in the shared space)."""
    source, pending, columns = _INDEXES[table]
    marks = _marks(conn)
    project_of = (
        "project" if source == "entities" else "(SELECT project FROM entities WHERE id = observations.entity_id)"
    )
    rows = conn.execute(
        f"SELECT id, {project_of}, {', '.join(columns)} FROM {source} WHERE id NOT IN (SELECT id FROM {pending})"
    ).fetchall()
    return [(row_id, marks.get(project, "") + texts[0], *texts[1:]) for row_id, project, *texts in rows]


def _assert_indexes_exact(path: Path) -> None:
    """Each trigram index holds exactly the trigrams of the documents it should: a text deleted
    under another mark than it was indexed with, or one left behind, fails this."""
    conn = sqlite3.connect(path)
    try:
        for table, (_, _, columns) in _INDEXES.items():
            conn.execute(
                f"CREATE VIRTUAL TABLE temp.expected USING fts5 ({', '.join(columns)},"
                " tokenize = 'trigram case_sensitive 1')"
            )
            places = ", ".join("?" * (len(columns) + 1))
            conn.executemany(
                f"INSERT INTO temp.expected (rowid, {', '.join(columns)}) VALUES ({places})",
                _expected_documents(conn, table),
            )
            conn.execute(f"CREATE VIRTUAL TABLE temp.held USING fts5vocab (main, {table}, instance)")
            conn.execute("CREATE VIRTUAL TABLE temp.wanted USING fts5vocab (temp, expected, instance)")
            held = conn.execute("SELECT term, doc, col, offset FROM temp.held ORDER BY 1, 2, 3, 4").fetchall()
            wanted = conn.execute("SELECT term, doc, col, offset FROM temp.wanted ORDER BY 1, 2, 3, 4").fetchall()
            assert held == wanted, table
            for name in ("held", "wanted", "expected"):
                conn.execute(f"DROP TABLE temp.{name}")
    finally:
        conn.close()


_DOCUMENT = "rowid, name, aliases, entity_type, observations, project"


def _assert_word_indexes_exact(store: SQLiteStore, path: Path) -> None:
    """Each scope's word index holds exactly the memory's documents of the entities the scope
    sees, one per project there is and one for the shared space once there is a project."""
    with store.read():
        pass  # a read brings the word indexes up to date
    conn = sqlite3.connect(path)
    try:
        projects = dict(conn.execute("SELECT id, project FROM project_marks"))
        project_of = dict(conn.execute("SELECT id, project FROM entities"))
        documents = {row[0]: row for row in conn.execute(f"SELECT {_DOCUMENT} FROM entity_words")}
        tables = {
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if re.fullmatch(r"entity_words_(p\d+|shared)", name)
        }
        assert tables == {f"entity_words_p{i}" for i in projects} | ({"entity_words_shared"} if projects else set())
        for table in tables:
            project = "" if table == "entity_words_shared" else projects[int(table.removeprefix("entity_words_p"))]
            held = {row[0]: row for row in conn.execute(f"SELECT {_DOCUMENT} FROM {table}")}
            assert held == {i: row for i, row in documents.items() if project_of[i] in ("", project)}, table
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def _official(store: SQLiteStore, scope: Scope, needle: str) -> list[str]:
    with store.read(scope):
        return sorted(hit.name for hit in store.search_entities(word_search([needle], limit=None)).hits if hit.official)


def _fill(store: SQLiteStore) -> None:
    for project in (SHARED, "alpha", "beta"):
        with store.write(Scope(project)):
            store.insert_entities(
                [
                    Entity(
                        f"{project or 'shared'}-{i}",
                        "thing",
                        (f"likes tea #{i}", f"in {project or 'shared'}"),
                        project=project,
                    )
                    for i in range(5)
                ]
            )


def test_each_project_has_its_own_mark_and_the_shared_space_none(tmp_path: Path):
    store = _quiet_store(tmp_path / "memory.db")
    _fill(store)
    store.index_pending_texts()
    with sqlite3.connect(tmp_path / "memory.db") as conn:
        marks = _marks(conn)
    assert sorted(marks) == ["alpha", "beta"]
    assert len(set(marks.values())) == 2
    for mark in marks.values():
        # One trigram, of characters no text typed by a person holds.
        assert len(mark) == 3 and all(0xE000 <= ord(character) <= 0xF8FF for character in mark)
    _assert_indexes_exact(tmp_path / "memory.db")
    _assert_word_indexes_exact(store, tmp_path / "memory.db")
    assert _official(store, Scope("alpha"), "likes tea #3") == ["alpha-3", "shared-3"]
    assert _official(store, Scope("beta"), "in beta") == [f"beta-{i}" for i in range(5)]
    assert _official(store, EVERY, "likes tea #3") == ["alpha-3", "beta-3", "shared-3"]
    store.close()


@pytest.mark.parametrize("indexed_first", [True, False], ids=["indexed", "pending"])
def test_every_change_leaves_the_trigram_indexes_exact(tmp_path: Path, indexed_first: bool):
    path = tmp_path / "memory.db"
    store = _quiet_store(path)
    _fill(store)
    if indexed_first:
        store.index_pending_texts()
    with store.write(EVERY):
        # Moved both ways, renamed, facts added and removed, deleted, a project deleted.
        store.move_entities(["alpha-0", "alpha-1"], "alpha", "beta")
        store.move_entities(["shared-0"], SHARED, "alpha")
        store.move_entities(["beta-4"], "beta", SHARED)
        store.move_entities(["alpha-2"], "alpha", "gamma")
    with store.write(Scope("alpha")):
        store.update_entity("alpha-3", Entity("Alpha Three", "renamed thing", project="alpha"))
        store.append_observations("alpha-4", ["plays zither"])
        store.remove_observations("alpha-4", ["likes tea #4"])
        store.delete_entities(["shared-0"])
    with store.write(EVERY):
        store.delete_project("beta")
    _assert_indexes_exact(path)
    with sqlite3.connect(path) as conn:
        # An entity deleted with its facts in place (SQLite's ON DELETE CASCADE takes them).
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM entities WHERE name = 'alpha-4'")
    _assert_indexes_exact(path)
    expected = ["Alpha Three", "beta-4", "shared-1", "shared-2", "shared-3", "shared-4"]
    assert _official(store, Scope("alpha"), "likes tea") == expected
    assert _official(store, Scope("gamma"), "in alpha") == ["alpha-2"]
    assert _official(store, Scope("alpha"), "renamed") == ["Alpha Three"]
    assert _official(store, Scope("alpha"), "zither") == []
    assert _official(store, Scope("beta"), "tea #4") == ["beta-4", "shared-4"]  # moved to the shared space
    store.index_pending_texts()
    _assert_indexes_exact(path)
    _assert_word_indexes_exact(store, path)
    assert _official(store, Scope("gamma"), "in alpha") == ["alpha-2"]
    assert _official(store, Scope("beta"), "tea #4") == ["beta-4", "shared-4"]
    assert _official(store, Scope("alpha"), "likes tea") == expected
    store.close()


def test_a_bulk_import_marks_each_project_s_texts(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = _quiet_store(path)
    with store.write(EVERY), store.bulk_insert():
        store.insert_entities(
            [Entity(f"e-{i}", "thing", (f"fact {i}",), project=("", "alpha", "beta")[i % 3]) for i in range(30)]
        )
    _assert_indexes_exact(path)
    # Beta's own and the shared space's (every third), not alpha's.
    assert _official(store, Scope("beta"), "fact 2") == [f"e-{i}" for i in (2, 20, 21, 23, 24, 26, 27, 29)]
    store.close()


def test_a_memory_with_projects_from_before_the_marks_is_indexed_again_with_them(tmp_path: Path):
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, script in migration_scripts("sqlite"):
        if number <= 17:
            if number == projects_schema.MIGRATION:
                projects_schema.give_tables_projects(conn)
            for statement in _split_sql(script):
                conn.execute(statement)
    for name, project in (("Ada", "alpha"), ("Bob", ""), ("Cy", "beta")):
        conn.execute(
            "INSERT INTO entities (name, entity_type, name_lc, type_lc, project) VALUES (?, 'person', ?, 'person', ?)",
            (name, name.lower(), project),
        )
        conn.execute(
            "INSERT INTO observations (entity_id, content, content_lc)"
            " SELECT id, 'likes tea', 'likes tea' FROM entities WHERE name = ?",
            (name,),
        )
    # Indexed as migration 17 indexed them: without marks.
    conn.execute("INSERT INTO entity_text (rowid, name_lc, type_lc) SELECT id, name_lc, type_lc FROM entities")
    conn.execute("INSERT INTO observation_text (rowid, content_lc) SELECT id, content_lc FROM observations")
    conn.execute("DELETE FROM entity_text_pending")
    conn.execute("DELETE FROM observation_text_pending")
    conn.execute("PRAGMA user_version = 17")
    conn.close()
    store = _quiet_store(path)
    _assert_indexes_exact(path)
    assert _official(store, Scope("alpha"), "likes tea") == ["Ada", "Bob"]
    store.index_pending_texts()
    _assert_indexes_exact(path)
    _assert_word_indexes_exact(store, path)
    assert _official(store, Scope("alpha"), "likes tea") == ["Ada", "Bob"]
    assert _official(store, Scope("beta"), "cy") == ["Cy"]
    store.close()


@pytest.mark.parametrize("shared", [0, 3, 1_200], ids=["no shared", "a few shared", "many shared"])
def test_a_search_in_a_project_finds_its_own_texts_and_the_shared_space_s_newest_first(tmp_path: Path, shared: int):
    # The shared space is read whole when small, through the whole memory's index when not.
    store = SQLiteStore(tmp_path / "memory.db")
    graph = KnowledgeGraph(store)
    with graph.working_in(Scope("elsewhere")):
        graph.create_entities([Entity(f"Other {i}", "note", ("drinks green tea",)) for i in range(50)])
    with graph.working_in(Scope(SHARED)):
        for start in range(0, shared, 500):
            graph.create_entities(
                [Entity(f"Shared {i}", "note", ("drinks green tea",)) for i in range(start, min(shared, start + 500))]
            )
    with graph.working_in(Scope("mine")):
        graph.create_entities([Entity(f"Mine {i}", "note", ("drinks green tea",)) for i in range(3)])
    expected = [f"Mine {i}" for i in (2, 1, 0)] + [f"Shared {i}" for i in reversed(range(shared))]
    for indexed in (False, True):
        if indexed:
            store.index_pending_texts()
        with graph.working_in(Scope("mine")):
            # Newest first past RANKED_AT_MOST, else ranked: compare as sets and by count.
            found = graph.search_nodes("green tea", limit=None, mode="lexical")
        names = [entity.name for entity in found.entities]
        assert sorted(names) == sorted(expected)
    store.close()


def test_a_deleted_project_takes_its_word_index_and_the_last_one_the_shared_space_s(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = _quiet_store(path)
    _fill(store)
    _assert_word_indexes_exact(store, path)
    with store.write(EVERY):
        store.delete_project("alpha")
    _assert_word_indexes_exact(store, path)
    with store.write(EVERY):
        store.delete_project("beta")
    _assert_word_indexes_exact(store, path)  # no project left: the memory's index alone
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM project_marks").fetchone() == (0,)
    with store.write(Scope("alpha")):
        store.insert_entities([Entity("Back", "thing", ("likes tea again",), project="alpha")])
    _assert_word_indexes_exact(store, path)
    assert _official(store, Scope("alpha"), "tea again") == ["Back"]
    store.close()
