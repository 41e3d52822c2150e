"""Ranked search on PostgreSQL: the same answers as SQLite's, from the word index of migration 0003."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from benchmarks.graphs import generate

from graphmem.domain.search import word_search
from graphmem.storage.base import Store
from graphmem.storage.postgres import PostgresStore
from graphmem.storage.sqlite import SQLiteStore

# Enough entities that every vocabulary word is in more than RANKED_AT_MOST (2,000) of
# them: the newest-first and pruned paths of the ranking are taken, not only exhaustive ones.
_SIZE = 7000

_QUERIES = [
    ("coffee engineer", None),
    ("berlin", 10),
    ("entity-4321", None),
    ("#123-1", 10),
    ("What does entity-77 know about coffee in berlin?", 10),
    ("What does entity-77 know about coffee in berlin?", 100),
    ("alpha bravo charlie", 10),
    ("tango 4321", 10),
    ("invoice release python", None),
    ("berlin", 10, "person"),
    ("coffee", None),
    ("#123-1", None, "project"),
    ("entity-12", 10, "place"),
    ("engineer coffee", 10, "concept"),
]


def _load(store: Store) -> None:
    entities, relations = generate(_SIZE)
    with store.write(), store.bulk_insert():
        store.insert_entities(entities)
        store.insert_relations(relations[: _SIZE // 2])


def _answers(store: Store) -> list[list[tuple[str, bool, float]]]:
    answers = []
    with store.read():
        for query, limit, *of_type in _QUERIES:
            search = word_search([query], limit=limit, entity_type=of_type[0] if of_type else None)
            result = store.search_entities(search)
            answers.append([(hit.name, hit.official, hit.score, result.total) for hit in result.hits])
    return answers


def _change(store: Store) -> None:
    """Deletes among the newest entities and facts (gaps in the ids a newest-first walk reads),
    and new facts on old entities (which make them the newest holders of their words)."""
    with store.write():
        store.delete_entities([f"entity-{i}" for i in range(_SIZE - 300, _SIZE, 3)])
        store.append_observations("entity-3", ["moved to berlin for the coffee", "#123-1 is a tag in a fact"])
        store.append_observations("entity-4000", ["an engineer of coffee machines"])
        store.remove_observations("entity-6998", [f for f in store.observations_of("entity-6998") or []][:1])


@pytest.fixture(scope="module")
def sqlite_answers(tmp_path_factory: pytest.TempPathFactory) -> list[list[tuple[str, bool, float]]]:
    store = SQLiteStore(Path(tmp_path_factory.mktemp("sqlite")) / "memory.db")
    try:
        _load(store)
        return _answers(store)
    finally:
        store.close()


def test_ranked_search_on_postgres_answers_as_sqlite_does_scores_to_the_bit(postgres_url, sqlite_answers):
    store = PostgresStore(postgres_url, "postgresql://test")
    try:
        _load(store)
        answers = _answers(store)
    finally:
        store.close()
    for question, ours, theirs in zip(_QUERIES, answers, sqlite_answers, strict=True):
        assert ours == theirs, question


def test_searches_after_deletes_and_new_facts_answer_as_sqlite_does(postgres_url, tmp_path):
    answers = []
    for store in (SQLiteStore(tmp_path / "memory.db"), PostgresStore(postgres_url, "postgresql://test")):
        try:
            _load(store)
            _change(store)
            answers.append(_answers(store))
        finally:
            store.close()
    sqlite, postgres = answers
    for question, ours, theirs in zip(_QUERIES, postgres, sqlite, strict=True):
        assert ours == theirs, question


def test_a_page_of_a_common_word_reads_no_entity_row_per_match(postgres_url):
    # Before: every observation holding "berlin" (thousands) was joined to its entity, then
    # grouped and sorted, to give the newest 2,001 (100 ms at 40,000 entities).
    store = PostgresStore(postgres_url, "postgresql://test")
    try:
        _load(store)
        with store.read():
            result = store.search_entities(word_search(["berlin"], limit=10))
            ((entity_rows,),) = store._rows(
                "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables"
                " WHERE relid = 'entities'::regclass"
            )
    finally:
        store.close()
    assert len(result.hits) == 10
    # The walk of names and types may read each entity once (on a memory this small the
    # planner scans the table rather than the trigram index); the facts' walk reads none.
    assert entity_rows <= _SIZE + 100


def test_a_database_made_before_the_word_index_upgrades_and_searches_as_a_new_one(postgres_url, sqlite_answers):
    store = PostgresStore(postgres_url, "postgresql://test")
    try:
        _load(store)
    finally:
        store.close()
    # Back to what migrations 0001 and 0002 made: no word index, the words blob's trigram index.
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE entity_words")
        conn.execute("CREATE INDEX entities_words_trgm ON entities USING gin (words gin_trgm_ops)")
        # The scripts after 0003 run again with it: each is safe to run twice.
        conn.execute("DELETE FROM graphmem_schema WHERE version >= 3")
    store = PostgresStore(postgres_url, "postgresql://test")
    try:
        answers = _answers(store)
        with store.write():
            store.append_observations("entity-5", ["drinks coffee with zebrafish"])
        with store.read():
            found = store.search_entities(word_search(["zebrafish"], limit=10))
    finally:
        store.close()
    assert answers == sqlite_answers
    assert [hit.name for hit in found.hits] == ["entity-5"]
