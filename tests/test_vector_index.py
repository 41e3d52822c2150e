"""The approximate index of search by meaning: it finds what exact search finds, it is rebuilt when
lost, and it follows every text embedded, changed and deleted after it was built.

The memory here holds 3,000 texts embedded by the real model (made once per module, copied
for each test); the index is asked for from 1,000 vectors instead of 300,000, so that a small
memory goes the way a large one does. How fast it is at a million entities is a benchmark's
question (benchmarks/vector_index.py), not a test's.
"""

from __future__ import annotations

import itertools
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.maintenance import EntityUpdate, update_entities
from graphmem.embedding import Embedder, load_embedder
from graphmem.storage.sqlite import SQLiteStore, vector_index
from graphmem.storage.vectors import dequantize

FIRST_NAMES = "Ada Ben Cleo Dev Eli Fay Gus Hana Ivo Jun Kai Lea Mo Nia Oli Pia Quin Rae Sol Tom".split()
LAST_NAMES = "Abbott Brandt Costa Dietz Evans Fuchs Garcia Hale Ito Jones Klein Lund Moreau Novak Ortiz".split()
DOES = [
    "teaches {} at a school in {}",
    "moved to {} after a job offer in {}",
    "is allergic to {} and avoids it in {}",
    "plays {} in a band that tours {}",
    "collects old {} bought at markets in {}",
    "wrote a book about {} set in {}",
    "repairs {} in a workshop near {}",
    "grows {} in a garden outside {}",
]
THINGS = "chemistry|violin|peanuts|bicycles|poetry|tomatoes|watches|history|jazz|cameras|shellfish|roses".split("|")
PLACES = "Lisbon|Oslo|Kyoto|Denver|Nairobi|Lima|Porto|Hanoi|Quebec|Tallinn|Perth|Seville".split("|")
QUESTIONS = [
    "Who is a music teacher?",
    "Which person relocated abroad for work?",
    "Who has a food allergy?",
    "Who is in a musical group?",
    "Who collects antiques?",
    "Who is an author?",
    "Who fixes things?",
    "Who likes gardening?",
    "Who lives in Japan?",
    "Who knows about photography?",
    "Who cannot eat seafood?",
    "Who teaches science?",
    "Who travels with a band in Europe?",
    "Who writes about the past?",
    "Who grows flowers?",
    "Who restores clocks?",
]

APPROXIMATE_FROM = 1_000


def _people() -> list[Entity]:
    """1,000 people with two facts each: 3,000 texts with their names."""
    facts = itertools.cycle(template.format(thing, place) for template in DOES for thing in THINGS for place in PLACES)
    names = [f"{first} {last} {number}" for number in range(4) for first in FIRST_NAMES for last in LAST_NAMES]
    return [Entity(name, "person", (next(facts), next(facts))) for name in names[:1000]]


@pytest.fixture(scope="module")
def model() -> Embedder:
    return load_embedder()


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, model: Embedder) -> Path:
    path = tmp_path_factory.mktemp("embedded") / "memory.db"
    store = SQLiteStore(path)
    graph = KnowledgeGraph(store, embedder=model)
    graph.create_entities(_people())
    while graph.embed_pending():
        pass
    store.close()
    return path


@pytest.fixture
def path(tmp_path: Path, embedded: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(vector_index, "APPROXIMATE_FROM", APPROXIMATE_FROM)
    copy = tmp_path / "memory.db"
    shutil.copyfile(embedded, copy)
    return copy


@pytest.fixture
def memory(path: Path, model: Embedder) -> Iterator[KnowledgeGraph]:
    store = SQLiteStore(path)
    yield KnowledgeGraph(store, embedder=model)
    store.close()


def _store(graph: KnowledgeGraph) -> SQLiteStore:
    assert isinstance(graph.store.inner, SQLiteStore)
    return graph.store


def _index_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}-ivf-*"))


def _nearest(graph: KnowledgeGraph, question: str, limit: int = 10) -> list[str]:
    store = _store(graph)
    query = graph.meaning.model().embed([question])[0]
    return [near.name for near in store.nearest_entities(query, graph.meaning.fingerprint, limit)]


def _exact_scores(graph: KnowledgeGraph, question: str) -> dict[str, float]:
    """Every entity's best cosine with the question, from every stored vector."""
    store = _store(graph)
    query = graph.meaning.model().embed([question])[0]
    rows = store._conn.execute(
        "SELECT e.name, v.vector FROM vectors AS v JOIN entities AS e ON e.id = v.entity_id"
    ).fetchall()
    scores = dequantize([row[1] for row in rows], len(query)) @ query
    best: dict[str, float] = {}
    for (name, _), score in zip(rows, scores.tolist(), strict=True):
        best[name] = max(best.get(name, -2.0), score)
    return best


def _exactly_nearest(graph: KnowledgeGraph, question: str, limit: int = 10) -> list[str]:
    """The entities whose best text is closest, by scoring every stored vector."""
    best = _exact_scores(graph, question)
    return sorted(best, key=lambda name: -best[name])[:limit]


def _recall(graph: KnowledgeGraph, question: str) -> float:
    """The share of the ten entities found that are among the true ten nearest (1.0: what exact
    search finds). Many people here share a fact, so an entity tied with the tenth counts."""
    best = _exact_scores(graph, question)
    tenth = sorted(best.values(), reverse=True)[9]
    return sum(best[name] >= tenth - 1e-6 for name in _nearest(graph, question)) / 10


def test_the_approximate_index_finds_nearly_every_one_of_the_ten_entities_exact_search_finds(
    memory: KnowledgeGraph, path: Path
):
    assert _store(memory).rebuild_vector_index()
    assert len(_index_files(path)) == 1
    assert float(np.mean([_recall(memory, question) for question in QUESTIONS])) >= 0.9


def test_a_memory_below_the_threshold_gets_no_index(path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(vector_index, "APPROXIMATE_FROM", 10_000)
    store = SQLiteStore(path)
    assert store.rebuild_vector_index()
    assert _index_files(path) == []
    store.close()


def test_a_large_memory_is_indexed_in_the_background_and_searched_exactly_meanwhile(memory: KnowledgeGraph, path: Path):
    assert _index_files(path) == []
    # The first search finds no index: it answers exactly and starts the build.
    assert _recall(memory, QUESTIONS[0]) == 1.0
    assert _store(memory).wait_for_vector_index(60)
    assert len(_index_files(path)) == 1
    assert _nearest(memory, "Who is allergic to peanuts?", 1)[0] in _exactly_nearest(
        memory, "Who is allergic to peanuts?"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_the_index_file_is_readable_by_its_owner_only_like_the_memory(memory: KnowledgeGraph, path: Path):
    # Its sign bits are derived from the memory's texts: as private as the memory itself.
    assert _store(memory).rebuild_vector_index()
    [index] = _index_files(path)
    assert index.stat().st_mode & 0o777 == 0o600


def test_a_lost_index_is_searched_exactly_then_built_again(memory: KnowledgeGraph, path: Path, model: Embedder):
    assert _store(memory).rebuild_vector_index()
    [lost] = _index_files(path)
    memory.store.close()
    lost.unlink()
    reopened = KnowledgeGraph(SQLiteStore(path), embedder=model)
    assert _recall(reopened, QUESTIONS[1]) == 1.0
    assert _store(reopened).wait_for_vector_index(60)
    [rebuilt] = _index_files(path)
    assert rebuilt != lost
    reopened.store.close()


def test_a_memory_copied_without_its_index_is_searched_exactly_and_indexed_again(
    memory: KnowledgeGraph, path: Path, model: Embedder
):
    assert _store(memory).rebuild_vector_index()
    copy = path.with_name("copy.db")
    shutil.copyfile(path, copy)
    # The copy names the original's index, which it does not have beside it.
    copied = KnowledgeGraph(SQLiteStore(copy), embedder=model)
    assert _recall(copied, QUESTIONS[2]) == 1.0
    assert _store(copied).wait_for_vector_index(60)
    assert len(_index_files(copy)) == 1
    copied.store.close()


def test_facts_embedded_after_the_build_are_found_by_meaning(memory: KnowledgeGraph):
    assert _store(memory).rebuild_vector_index()
    memory.create_entities([Entity("Zed Quill", "person", ("adopted a kitten named Miso",))])
    while memory.embed_pending():
        pass
    assert _nearest(memory, "Who has a new pet cat?", 1) == ["Zed Quill"]


def test_a_fact_deleted_or_an_entity_renamed_after_the_build_is_followed_by_the_index(memory: KnowledgeGraph):
    memory.create_entities([Entity("Zed Quill", "person", ("adopted a kitten named Miso",))])
    while memory.embed_pending():
        pass
    assert _store(memory).rebuild_vector_index()
    assert _nearest(memory, "Who has a new pet cat?", 1) == ["Zed Quill"]
    memory.delete_observations([ObservationDeletion("Zed Quill", ("adopted a kitten named Miso",))])
    assert "Zed Quill" not in _nearest(memory, "Who has a new pet cat?", 3)
    memory.add_observations([ObservationAddition("Zed Quill", ("keeps bees on a rooftop",))])
    update_entities(memory, [EntityUpdate("Zed Quill", new_name="Beekeeper Zed")])
    while memory.embed_pending():
        pass
    assert _nearest(memory, "Who produces honey?", 1) == ["Beekeeper Zed"]
    memory.delete_entities(["Beekeeper Zed"])
    assert "Beekeeper Zed" not in _nearest(memory, "Who produces honey?", 10)


def test_vectors_dropped_for_another_model_leave_the_old_index_unused(memory: KnowledgeGraph, path: Path):
    store = _store(memory)
    assert store.rebuild_vector_index()
    assert store.use_model("another-model/0000") is True
    assert store.nearest_entities(np.ones(384, dtype=np.float32) / np.sqrt(384), "another-model/0000", 10) == []
    (token,) = store._conn.execute("SELECT count(*) FROM vector_index").fetchone()
    assert token == 0


def test_once_a_tenth_of_the_memory_is_newer_than_the_index_it_is_built_again(memory: KnowledgeGraph, path: Path):
    store = _store(memory)
    assert store.rebuild_vector_index()
    [first] = _index_files(path)
    # 310 facts: more than a tenth of the 3,000 texts indexed.
    memory.create_entities([Entity("Newcomer", "person", tuple(f"visited museum number {n}" for n in range(310)))])
    while memory.embed_pending():
        pass
    _nearest(memory, "Who visits museums?")  # finds the tail too large and starts the build
    assert store.wait_for_vector_index(60)
    [second] = _index_files(path)
    assert second != first
    assert _nearest(memory, "Who visits museums?", 1) == ["Newcomer"]


def test_once_a_quarter_of_what_the_index_offers_is_deleted_it_is_built_again(memory: KnowledgeGraph, path: Path):
    store = _store(memory)
    assert store.rebuild_vector_index()
    [first] = _index_files(path)
    memory.delete_entities([entity.name for entity in _people()[:600]])
    # Enough searches for the deleted entries to be counted over 10,000 candidates.
    for question in QUESTIONS * 2:
        _nearest(memory, question)
    assert store.wait_for_vector_index(60)
    [second] = _index_files(path)
    assert second != first
    assert float(np.mean([_recall(memory, question) for question in QUESTIONS])) >= 0.9
