"""Projects on PostgreSQL: what the store contract cannot see. A memory made before migration
0004 keeps everything in the shared space; a search in a small project reads what the project
holds; each thread's transaction keeps its own scope; search by meaning keeps to the scope."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest

from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.domain.search import word_search
from graphmem.storage.base import StoreCounts
from graphmem.storage.migration_scripts import migration_scripts
from graphmem.storage.postgres import SCHEMA_VERSION, PostgresStore
from graphmem.storage.postgres.vectors import DIMENSIONS
from graphmem.storage.vectors import EmbeddedText

API, TOOL = Scope("github.com/acme/api"), Scope("tool")


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, "postgresql://test")
    yield opened
    opened.close()


def _fill_projects(store: PostgresStore) -> None:
    """Alice shared; a README in each of two projects."""
    with store.write():
        store.insert_entities(
            [
                Entity("Alice", "person", ("reviews code",)),
                Entity("README", "file", ("explains the api",), project=API.home),
                Entity("README", "file", ("explains the tool",), project=TOOL.home),
            ]
        )
        store.insert_relations([Relation("Alice", "README", "wrote", project=API.home)])


# -- migration 0004 -------------------------------------------------------------------------------


def _memory_before_projects(url: str) -> None:
    """A memory as graphmem left it before projects (migrations 0001 to 0003): Bob with an alias
    and a fact, Acme with a fact, and a relation between them."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE graphmem_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for number, script in migration_scripts("postgres"):
            if number <= 3:
                conn.execute(script.encode("utf-8"))
                conn.execute("INSERT INTO graphmem_schema (version) VALUES (%s)", (number,))
        ids = {}
        for name, entity_type, extra in (("Bob", "person", '{"aliases": ["Bobby"]}'), ("Acme", "company", None)):
            row = conn.execute(
                "INSERT INTO entities (name, entity_type, name_lc, type_lc, extra) VALUES (%s, %s, %s, %s, %s)"
                " RETURNING id",
                (name, entity_type, name.lower(), entity_type, extra),
            ).fetchone()
            assert row is not None
            ids[name] = row[0]
        conn.execute("INSERT INTO entity_aliases (alias, entity_id) VALUES ('Bobby', %s)", (ids["Bob"],))
        conn.execute(
            "INSERT INTO observations (entity_id, content, content_lc) VALUES"
            " (%s, 'Moved to Berlin', 'moved to berlin'), (%s, 'Makes anvils', 'makes anvils')",
            (ids["Bob"], ids["Acme"]),
        )
        conn.execute("INSERT INTO relations (from_name, to_name, relation_type) VALUES ('Bob', 'Acme', 'works_at')")
        conn.execute("UPDATE graphmem_state SET entities = 2, observations = 2, relations = 1")


def _index_names(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {
            name for (name,) in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        }


def _everything(store: PostgresStore) -> tuple[object, ...]:
    with store.read():
        return (
            [(e.name, e.observations, e.aliases, e.project) for e in store.iter_entities()],
            [(r.key, r.project) for r in store.iter_relations()],
            store.counts(),
        )


def test_a_memory_from_before_projects_keeps_everything_in_the_shared_space(postgres_url: str):
    _memory_before_projects(postgres_url)
    store = PostgresStore(postgres_url, "postgresql://test")
    try:
        before = _everything(store)
        assert before == (
            [("Bob", ("Moved to Berlin",), ("Bobby",), ""), ("Acme", ("Makes anvils",), (), "")],
            [(("Bob", "Acme", "works_at"), "")],
            StoreCounts(2, 1, 2),
        )
        assert store.integrity_problems() == []
        with store.read(API):  # a project sees the shared space
            assert store.resolve_names(["Bobby"]) == {"Bobby": "Bob"}
            assert [hit.name for hit in store.search_entities(word_search(["berlin"], limit=10)).hits] == ["Bob"]
        with store.write(API):
            store.insert_entities([Entity("Carol", "person", project=API.home)])
            store.append_observations("Bob", ["Works with Carol"])
        with store.read(API):
            assert store.observations_of("Bob") == ["Moved to Berlin", "Works with Carol"]
            entities = [(e.name, e.project) for e in store.iter_entities()]
            assert entities == [("Bob", ""), ("Acme", ""), ("Carol", API.home)]
    finally:
        store.close()
    indexes = _index_names(postgres_url)
    assert {"entities_name_in_project_key", "relations_key_in_project", "entities_by_project"} <= indexes
    assert not {"entities_name_key", "relations_key"} & indexes
    with psycopg.connect(postgres_url) as conn:
        # A name is unique within its project only.
        insert = (
            "INSERT INTO entities (name, entity_type, name_lc, type_lc, project) VALUES ('Bob', 'x', 'bob', 'x', %s)"
        )
        conn.execute(insert, ("tool",))
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(insert, ("",))


def test_migration_0004_run_again_changes_nothing(postgres_url: str):
    _memory_before_projects(postgres_url)
    store = PostgresStore(postgres_url, "postgresql://test")
    try:
        _fill_projects(store)
        before = _everything(store)
    finally:
        store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DELETE FROM graphmem_schema WHERE version >= 4")
    again = PostgresStore(postgres_url, "postgresql://test")
    try:
        assert _everything(again) == before
    finally:
        again.close()
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT max(version) FROM graphmem_schema").fetchone() == (SCHEMA_VERSION,)


# -- what a scope costs and sees ------------------------------------------------------------------

_OTHERS = 3000


def _entity_rows_read(store: PostgresStore) -> int:
    """The rows of `entities` this transaction has read so far (and, until the server next
    flushes its statistics, earlier ones of this connection: only differences count)."""
    ((read,),) = store._rows(
        "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables"
        " WHERE relid = 'entities'::regclass"
    )
    return int(read)


def test_a_search_in_a_small_project_reads_the_project_not_the_memory(store: PostgresStore):
    others = [
        Entity(f"entity-{i}", "note", (f"coffee talk number {i} in berlin",), project="big") for i in range(_OTHERS)
    ]
    small = [Entity(f"small-{i}", "note", (f"coffee in the small project {i}",), project="small") for i in range(30)]
    with store.write(), store.bulk_insert():  # which gives the planner its statistics
        store.insert_entities(others[: _OTHERS // 2] + small + others[_OTHERS // 2 :])
    for query, expected in (("coffee", 10), ("berlin", 0), ("small project coffee", 10), ("number 77", 0)):
        with store.read(Scope("small")):
            start = _entity_rows_read(store)
            hits = store.search_entities(word_search([query], limit=10)).hits
            read = _entity_rows_read(store) - start
        assert len(hits) == expected, query
        assert all(hit.name.startswith("small-") for hit in hits), query
        # Found from the project's index: about what the project holds, not the other 3,000.
        assert read < 300, query


def test_each_thread_s_transaction_keeps_its_own_scope(store: PostgresStore):
    _fill_projects(store)
    both_open = threading.Barrier(2, timeout=10)

    def read_in(scope: Scope) -> list[tuple[str, ...]]:
        with store.read(scope):
            both_open.wait()  # the other thread's transaction, in another scope, is open now
            seen = [entity.observations for entity in store.get_entities(["README"])]
            both_open.wait()
            return seen

    with ThreadPoolExecutor(2) as pool:
        api, tool = pool.submit(read_in, API), pool.submit(read_in, TOOL)
        assert api.result() == [("explains the api",)]
        assert tool.result() == [("explains the tool",)]


def test_a_project_key_of_any_characters_is_kept_apart_from_another(store: PostgresStore):
    # A folder's path may hold a quote, a percent sign (psycopg's parameter mark), a backslash,
    # a character outside the BMP, U+0001 (which the stored escape uses) or a lone surrogate;
    # the other project's key is the start of this one's.
    odd, start = Scope("/home/o'neil/100% \\done 😀 \x01 \udcff"), Scope("/home/o'neil/100% \\done")
    with store.write():
        store.insert_entities(
            [
                Entity("notes", "file", ("odd place",), project=odd.home),
                Entity("notes", "file", ("plain place",), project=start.home),
                Entity("todo", "file"),
            ]
        )
    with store.read(odd):
        assert [(e.name, e.project, e.observations) for e in store.get_entities(["notes", "todo"])] == [
            ("notes", odd.home, ("odd place",)),
            ("todo", "", ()),
        ]
        assert store.counts() == StoreCounts(2, 0, 1)
        assert [hit.name for hit in store.search_entities(word_search(["place"], limit=10)).hits] == ["notes"]
        assert [c.project for c in store.project_counts()] == ["", odd.home]
    with store.read(start):
        assert store.observations_of("notes") == ["plain place"]


def test_a_search_by_meaning_keeps_to_the_scope_and_each_text_to_its_own_entity(store: PostgresStore):
    if store.why_no_vectors is not None:
        pytest.skip(store.why_no_vectors)
    _fill_projects(store)
    store.use_model("test-model")
    claimed = store.claim_texts(100, 60)
    # Every text a vector of its own, at right angles to every other: a query equal to one
    # text's vector scores that text's entity 1 and every other 0.
    vectors = np.eye(DIMENSIONS, dtype=np.float32)[: len(claimed)]
    assert store.save_vectors([EmbeddedText(text, vector) for text, vector in zip(claimed, vectors, strict=True)]) == 6
    (tool_fact,) = [vector for text, vector in zip(claimed, vectors, strict=True) if text.text == "explains the tool"]
    for scope, expected in (
        (TOOL, [("Alice", 0.0), ("README", 1.0)]),
        (API, [("Alice", 0.0), ("README", 0.0)]),
        (Scope(), [("Alice", 0.0), ("README", 0.0), ("README", 1.0)]),
    ):
        with store.read(scope):
            near = store.nearest_entities(tool_fact, "test-model", 10)
        assert sorted((hit.name, round(hit.score, 6)) for hit in near) == expected, scope
