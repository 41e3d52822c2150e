"""Search by meaning at every moment a user meets: while the memory is still being embedded, and
for queries close to nothing in particular.

The real model (all-MiniLM-L6-v2) on real SQLite files. The background worker is frozen by
embedding by hand: a memory a quarter embedded is one whose worker has embedded a quarter of
its texts, in the order the worker takes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks.retrieval.evaluate import ranked_names
from benchmarks.retrieval.sets import EvalSet, Memory, load_meaning, load_quality

from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.embedding import Embedder, load_embedder
from graphmem.storage.sqlite import SQLiteStore
from graphmem.tools import ALL_TOOLS, ToolContext

STAGES = (10, 25, 50, 75, 100)
"""Percent of the memory's texts embedded when the questions are asked."""


@pytest.fixture(scope="module")
def model() -> Embedder:
    return load_embedder()


def _graph(path: Path, model: Embedder) -> KnowledgeGraph:
    return KnowledgeGraph(SQLiteStore(path), embedder=model)


def _embed(graph: KnowledgeGraph, count: int) -> None:
    done = 0
    while done < count and (taken := graph.embed_pending(min(32, count - done))):
        done += taken


def _recall_at_5(graph: KnowledgeGraph, memory: Memory, mode: str) -> float:
    found = 0.0
    for question in memory.questions:
        names = ranked_names(graph, question.text, mode)[:5]
        found += sum(answer in names for answer in question.answers) / len(question.answers)
    return found / len(memory.questions)


@pytest.mark.slow
@pytest.mark.parametrize("eval_set", [load_meaning(None), load_quality(None)], ids=lambda s: s.name)
def test_hybrid_search_finds_at_least_what_words_find_at_every_stage_of_embedding(
    eval_set: EvalSet, model: Embedder, tmp_path: Path
):
    (memory,) = eval_set.memories
    graph = _graph(tmp_path / "memory.db", model)
    graph.import_graph(memory.entities, memory.relations)
    assert graph.meaning.vectors is not None
    texts = graph.meaning.vectors.vector_progress().waiting
    lexical = _recall_at_5(graph, memory, "lexical")
    assert _recall_at_5(graph, memory, "hybrid") == lexical  # nothing embedded: the words' answer
    embedded = 0
    for stage in STAGES:
        _embed(graph, texts * stage // 100 - embedded)
        embedded = texts * stage // 100
        hybrid = _recall_at_5(graph, memory, "hybrid")
        assert hybrid >= lexical, f"{stage}% embedded: hybrid recall@5 {hybrid:.3f} < lexical {lexical:.3f}"


@pytest.fixture
def part_embedded(tmp_path: Path, model: Embedder) -> Iterator[KnowledgeGraph]:
    """People whose facts are embedded, and one written since, whose facts still wait."""
    graph = _graph(tmp_path / "memory.db", model)
    graph.create_entities(
        [
            Entity("Ben", "person", ("drinks coffee at the office", "has a sister in Lyon")),
            Entity("Cleo", "person", ("brews herbal infusions in the evening", "walks her dog at dawn")),
            Entity("Dora", "person", ("sells loose leaf tea at the market",)),
            Entity("Eve", "person", ("enjoys a warm drink every morning",)),
        ]
    )
    _embed(graph, 1000)
    graph.create_entities([Entity("Ada", "person", ("drinks green tea every morning with honey",))])
    yield graph
    graph.store.close()


def test_an_entity_not_embedded_yet_keeps_the_place_its_words_give_it(part_embedded: KnowledgeGraph):
    query = "green tea with honey in the morning"
    lexical = ranked_names(part_embedded, query, "lexical")
    hybrid = ranked_names(part_embedded, query, "hybrid")
    # Ada is the best word match, written after the others were embedded; Eve, embedded, is
    # close in meaning, and would be lifted over her if Ada counted as far from the question.
    assert lexical[:2] == ["Ada", "Eve"]
    assert hybrid[:2] == ["Ada", "Eve"]
    _embed(part_embedded, 1000)
    assert ranked_names(part_embedded, query, "hybrid")[0] == "Ada"


def _search_tool(graph: KnowledgeGraph, arguments: dict[str, Any]) -> Any:
    (spec,) = [spec for spec in ALL_TOOLS if spec.name == "search_nodes"]
    return spec.run(ToolContext(graph), spec.arguments.model_validate(arguments))


def test_search_nodes_says_when_meaning_ranked_it_while_part_of_the_memory_waited(part_embedded: KnowledgeGraph):
    question = {"query": "Who has a hot drink early in the day?", "limit": 5}
    early = _search_tool(part_embedded, question)
    assert early.structured["partlyEmbedded"] is True
    # The official text is unchanged: the flag is in the structured answer only.
    assert "partlyEmbedded" not in early.text
    _embed(part_embedded, 1000)
    late = _search_tool(part_embedded, question)
    assert "partlyEmbedded" not in late.structured
    # A search the words alone answered says nothing either: its answer is the official one.
    assert set(_search_tool(part_embedded, {"query": "Nonexistent"}).structured) == {"entities", "relations"}


GIBBERISH = ["zq", "FÉ", "x", "qwerty", "kwyjibo flurb", "lorem ipsum", "blorptastic wumbo", "Jhon", "xkcd"]
OTHER_SCRIPTS = ["Ωμέγα", "人工知能", "Москва"]


@pytest.fixture(scope="module")
def embedded_memories(tmp_path_factory: pytest.TempPathFactory, model: Embedder) -> dict[int, KnowledgeGraph]:
    """The meaning set's memory, whole and cut to 40 and 15 entities, every text embedded."""
    (memory,) = load_meaning(None).memories
    graphs = {}
    for size in (15, 40, len(memory.entities)):
        graph = _graph(tmp_path_factory.mktemp("memory") / "memory.db", model)
        graph.import_graph(memory.entities[:size], ())
        _embed(graph, 100_000)
        graphs[size] = graph
    return graphs


@pytest.mark.parametrize("query", GIBBERISH + OTHER_SCRIPTS)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_query_close_to_nothing_in_particular_finds_what_its_words_find(
    embedded_memories: dict[int, KnowledgeGraph], query: str, mode: str
):
    for size, graph in embedded_memories.items():
        by_words = ranked_names(graph, query, "lexical")
        found = ranked_names(graph, query, mode)
        expected = by_words if mode == "hybrid" else []
        assert found == expected, f"{size} entities: {query!r} ({mode}) found {found}"


def test_a_misspelt_word_still_finds_its_word_by_meaning(embedded_memories: dict[int, KnowledgeGraph]):
    # Tom Okafor bakes sourdough; the words of "sourdugh" match nothing.
    for size, graph in embedded_memories.items():
        assert ranked_names(graph, "sourdugh", "lexical") == []
        assert ranked_names(graph, "sourdugh", "hybrid")[:1] == ["Tom Okafor"], f"{size} entities"
