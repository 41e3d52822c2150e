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
]


def _load(store: Store) -> None:
    entities, relations = generate(_SIZE)
    with store.write(), store.bulk_insert():
        store.insert_entities(entities)
        store.insert_relations(relations[: _SIZE // 2])


def _answers(store: Store) -> list[list[tuple[str, bool, float]]]:
    answers = []
    with store.read():
        for query, limit in _QUERIES:
            result = store.search_entities(word_search([query], limit=limit))
            answers.append([(hit.name, hit.official, hit.score) for hit in result.hits])
    return answers


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
    for (query, limit), ours, theirs in zip(_QUERIES, answers, sqlite_answers, strict=True):
        assert ours == theirs, (query, limit)


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
        conn.execute("DELETE FROM graphmem_schema WHERE version = 3")
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
