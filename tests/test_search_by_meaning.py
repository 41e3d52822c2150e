"""Search by meaning, in process: the queue of texts to embed, the vectors, and the fused ranking.

Every test here runs the real model (all-MiniLM-L6-v2 from its PyPI package, through
graphmem.embedding) on real SQLite files: what they check is what a user would, that a
question finds a fact written in other words, and that vectors follow every change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.maintenance import EntityUpdate, merge_entities, update_entities
from graphmem.domain.meaning import Meaning
from graphmem.domain.observations import records_of
from graphmem.embedding import Embedder, load_embedder
from graphmem.storage.jsonl import JsonlStore
from graphmem.storage.sqlite import SQLiteStore

MOVED = Entity("Bob", "person", ("relocated to Germany last spring", "plays bass in a jazz band"))
PEOPLE = [
    MOVED,
    Entity("Alice", "person", ("cannot eat peanuts or almonds", "data engineer at Globex")),
    Entity("Carol", "person", ("owns a red bicycle", "teaches mathematics at a high school")),
    Entity("Dan", "person", ("bought a new phone", "works from home on Fridays")),
]


@pytest.fixture(scope="module")
def model() -> Embedder:
    return load_embedder()


@pytest.fixture
def memory(tmp_path: Path, model: Embedder) -> Iterator[KnowledgeGraph]:
    store = SQLiteStore(tmp_path / "memory.db")
    yield KnowledgeGraph(store, embedder=model)
    store.close()


def _embed_all(graph: KnowledgeGraph) -> int:
    done = 0
    while taken := graph.embed_pending():
        done += taken
    return done


def _names(graph: KnowledgeGraph, query: str, **options: object) -> list[str]:
    return [entity.name for entity in graph.search_nodes(query, **options).entities]  # type: ignore[arg-type]


def test_every_text_written_waits_for_its_vector_until_embedded_and_then_none_waits(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    vectors = memory.meaning.vectors
    assert vectors is not None
    # Four names and eight observations.
    assert vectors.vector_progress().waiting == 12
    assert _embed_all(memory) == 12
    progress = vectors.vector_progress()
    assert (progress.embedded, progress.waiting) == (12, 0)
    assert progress.model == memory.meaning.model().fingerprint


def test_the_entities_with_a_text_still_waiting_are_told_apart_from_those_embedded(memory: KnowledgeGraph):
    memory.create_entities([Entity("Bob", "person", ("relocated to Germany",)), Entity("Eve", "person", ())])
    vectors = memory.meaning.vectors
    assert vectors is not None
    assert vectors.any_waiting() and vectors.waiting_among(["Bob", "Eve", "Nobody"]) == {"Bob", "Eve"}
    _embed_all(memory)
    memory.add_observations([ObservationAddition("Eve", ("plays the cello",))])
    assert vectors.waiting_among(["Bob", "Eve"]) == {"Eve"}  # one new fact makes the whole entity wait
    _embed_all(memory)
    assert not vectors.any_waiting() and vectors.waiting_among(["Bob", "Eve"]) == set()


def test_a_question_sharing_no_word_with_the_fact_finds_it_by_meaning_not_by_words(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    assert _names(memory, "Who moved abroad?", mode="lexical") == []
    assert _names(memory, "Who moved abroad?", mode="semantic", limit=3)[0] == "Bob"
    assert _names(memory, "Who moved abroad?", limit=3)[0] == "Bob"
    assert _names(memory, "Which colleague has a nut allergy?", limit=3)[0] == "Alice"


def test_every_entity_containing_the_query_comes_first_in_a_hybrid_search(memory: KnowledgeGraph):
    memory.create_entities([*PEOPLE, Entity("Erin", "person", ("moved abroad in 2020",))])
    _embed_all(memory)
    # "relocated" is in Bob's facts only: the official substring search returns Bob alone,
    # and Bob stays first although Erin's fact is as close in meaning.
    assert _names(memory, "relocated")[0] == "Bob"
    assert _names(memory, "moved abroad")[0] == "Erin"


def test_a_search_right_after_a_write_finds_the_new_fact_by_words_before_it_is_embedded(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    memory.add_observations([ObservationAddition("Dan", ("adopted a kitten named Miso",))])
    assert _names(memory, "Miso", limit=3)[0] == "Dan"
    assert "Dan" not in _names(memory, "Who has a new pet cat?", mode="semantic", limit=1)
    _embed_all(memory)
    assert _names(memory, "Who has a new pet cat?", mode="semantic", limit=1) == ["Dan"]


def test_a_deleted_fact_no_longer_finds_its_entity_by_meaning(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    memory.delete_observations([ObservationDeletion("Bob", ("relocated to Germany last spring",))])
    assert "Bob" not in _names(memory, "Who moved abroad?", mode="semantic", limit=1)
    memory.delete_entities(["Alice"])
    assert "Alice" not in _names(memory, "Which colleague has a nut allergy?", mode="semantic")


def test_a_renamed_entity_is_found_by_its_new_name_once_embedded_again(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    update_entities(memory, [EntityUpdate("Carol", new_name="Professor Caroline Whitfield")])
    vectors = memory.meaning.vectors
    assert vectors is not None
    assert vectors.vector_progress().waiting == 1  # the entity's own text; its facts are unchanged
    _embed_all(memory)
    assert _names(memory, "the professor", mode="semantic", limit=1) == ["Professor Caroline Whitfield"]


def test_after_a_merge_the_facts_of_both_find_the_entity_that_remains(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    merge_entities(memory, "Bob", "Dan")
    _embed_all(memory)
    assert _names(memory, "Who moved abroad?", mode="semantic", limit=1) == ["Dan"]
    assert _names(memory, "Who plays music?", mode="semantic", limit=1) == ["Dan"]
    vectors = memory.meaning.vectors
    assert vectors is not None
    # Three people left: their names and their facts (Dan's four now), nothing of Bob's twice.
    assert vectors.vector_progress().embedded == 3 + 2 + 2 + 4


def test_a_correction_is_found_by_meaning_and_the_fact_it_supersedes_stays_in_the_history(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    [dan] = memory.store.get_entities(["Dan"])
    [old] = [record for record in records_of(dan) if record.content == "bought a new phone"]
    memory.add_observations([ObservationAddition("Dan", ("switched to a tablet instead",), (old.id,))])
    _embed_all(memory)
    assert _names(memory, "Who changed to a tablet computer?", mode="semantic", limit=1) == ["Dan"]


def test_a_claim_whose_process_died_is_taken_up_again_and_nothing_is_lost(tmp_path: Path, model: Embedder):
    first = SQLiteStore(tmp_path / "memory.db")
    KnowledgeGraph(first).create_entities(PEOPLE)
    claimed = first.claim_texts(5, lease_seconds=0.0)  # a process that claimed, then died
    assert len(claimed) == 5
    first.close()
    second = SQLiteStore(tmp_path / "memory.db")
    graph = KnowledgeGraph(second, embedder=model)
    assert _embed_all(graph) == 12
    assert second.vector_progress().waiting == 0
    second.close()


def test_two_processes_on_one_memory_never_claim_the_same_text(tmp_path: Path):
    stores = [SQLiteStore(tmp_path / "memory.db") for _ in range(2)]
    KnowledgeGraph(stores[0]).create_entities(PEOPLE)
    first = stores[0].claim_texts(7, lease_seconds=60.0)
    second = stores[1].claim_texts(7, lease_seconds=60.0)
    keys = [(text.kind, text.row_id) for text in first + second]
    assert len(keys) == len(set(keys)) == 12
    assert stores[0].claim_texts(7, lease_seconds=60.0) == []
    for store in stores:
        store.close()


def test_vectors_another_model_made_are_dropped_and_everything_is_embedded_again(tmp_path: Path, model: Embedder):
    store = SQLiteStore(tmp_path / "memory.db")
    graph = KnowledgeGraph(store, embedder=model)
    graph.create_entities(PEOPLE)
    _embed_all(graph)
    assert store.use_model("another-model/0000") is True
    assert store.vector_progress().waiting == 12
    assert _names(graph, "Who moved abroad?", mode="semantic") == []  # none are this model's
    store.close()


def test_semantic_search_of_a_memory_without_meaning_says_why_and_what_to_use(tmp_path: Path, model: Embedder):
    off = KnowledgeGraph(SQLiteStore(tmp_path / "off.db"))
    with pytest.raises(InvalidInputError, match='"lexical" or "hybrid"'):
        off.search_nodes("anything", mode="semantic")
    jsonl = KnowledgeGraph(JsonlStore(tmp_path / "memory.jsonl"), embedder=model)
    jsonl.create_entities(PEOPLE)
    with pytest.raises(InvalidInputError, match="JSONL"):
        jsonl.search_nodes("anything", mode="semantic")
    # Hybrid, the default, is the word search there.
    assert _names(jsonl, "relocated") == ["Bob"]
    with pytest.raises(InvalidInputError, match="'hybrid', 'lexical', 'semantic'"):
        off.search_nodes("anything", mode="fuzzy")


def test_a_memory_from_before_search_by_meaning_has_all_its_texts_waiting_once_opened(tmp_path: Path):
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    KnowledgeGraph(store).create_entities(PEOPLE)
    store.close()
    # Back to schema 12: no vector tables, as a memory written by the last release.
    with sqlite3.connect(path) as connection:
        for table in ("vectors", "vectors_stale", "vector_model"):
            connection.execute(f"DROP TABLE {table}")
        for (trigger,) in connection.execute("SELECT name FROM sqlite_master WHERE name LIKE 'vectors_%'").fetchall():
            connection.execute(f"DROP TRIGGER {trigger}")
        connection.execute("PRAGMA user_version = 12")
    reopened = SQLiteStore(path)
    assert reopened.vector_progress().waiting == 12
    reopened.close()


def test_the_model_is_loaded_on_first_need_and_only_once():
    loads: list[int] = []

    def load() -> Embedder:
        loads.append(1)
        return load_embedder()

    meaning = Meaning(load, None)
    assert not meaning.loaded
    assert not meaning.enabled  # no store that keeps vectors
    meaning = Meaning(load, SQLiteStore(":memory:"))
    assert meaning.enabled and not meaning.loaded and loads == []
    meaning.model()
    meaning.model()
    assert loads == [1]


def test_a_second_connection_finds_by_meaning_what_the_first_embedded(tmp_path: Path, model: Embedder):
    # A server and its embedding worker: two connections of one process, one index between them.
    serving = SQLiteStore(tmp_path / "memory.db")
    worker = SQLiteStore(tmp_path / "memory.db")
    KnowledgeGraph(serving).create_entities(PEOPLE)
    assert worker.warm_vectors() == 0
    assert _embed_all(KnowledgeGraph(worker, embedder=model)) == 12
    assert worker.warm_vectors() == 12
    graph = KnowledgeGraph(serving, embedder=model)
    assert _names(graph, "Who moved abroad?", mode="semantic", limit=1) == ["Bob"]
    for store in (serving, worker):
        store.close()
