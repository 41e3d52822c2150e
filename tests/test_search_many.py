"""A query that more than RANKED_AT_MOST entities contain (a common word) on SQLite.

What a user sees: the answer comes at once on any size of memory, the entities whose
name or type contains the query first, then the most recent; pages follow one another
without repeating; the answer says that more entities match than it counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import RANKED_AT_MOST
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS, ToolContext

SEARCH = next(spec for spec in ALL_TOOLS if spec.name == "search_nodes")
# More than twice as many: a word in every entity counts past RANKED_AT_MOST before it is
# "common" (in half of them).
MANY = 2 * RANKED_AT_MOST + 300


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeGraph]:
    """One large memory per backend for the module: a common word answers alike on both."""
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        url = server.create_memory()
        request.addfinalizer(lambda: server.drop_memory(url))
        settings = Settings(database_url=url, semantic=False)
    else:
        settings = Settings(memory_path=tmp_path_factory.mktemp("many") / "memory.db")
    store = open_store(settings)
    graph = KnowledgeGraph(store)
    # The oldest entity holds the word in its name; every other one in an observation,
    # a tenth of them twice (a higher score, were they scored).
    entities = [Entity("Coffee Club", "club", ("founded long ago",))]
    for i in range(MANY):
        observations = ("drinks coffee daily", "more coffee") if i % 10 == 0 else (f"drinks coffee at {i}",)
        entities.append(Entity(f"person-{i}", "person" if i % 40 == 1 else "robot", observations))
    entities.append(Entity("Tea Room", "place", ("no such drink here",)))
    graph.import_graph(entities, [])
    yield graph
    store.close()


def _search(graph: KnowledgeGraph, **arguments: Any) -> Any:
    return SEARCH.run(ToolContext(graph, response_budget=25_000), SEARCH.arguments.model_validate(arguments))


def _names(answer: Any) -> list[str]:
    return [entity["name"] for entity in answer.structured["entities"]]


def test_a_common_word_answers_the_name_match_first_then_the_newest(memory: KnowledgeGraph) -> None:
    answer = _search(memory, query="coffee")
    names = _names(answer)
    assert names[0] == "Coffee Club"
    newest = [f"person-{i}" for i in range(MANY - 1, MANY - len(names), -1)]
    assert names[1:] == newest
    assert "Tea Room" not in names


def test_the_answer_says_more_entities_match_than_it_counted(memory: KnowledgeGraph) -> None:
    answer = _search(memory, query="coffee")
    truncated = answer.structured["truncated"]
    assert truncated["atLeast"] is True
    assert truncated["nextOffset"] == len(answer.structured["entities"])
    # It counted past RANKED_AT_MOST, and no further.
    assert truncated["omittedEntities"] + len(answer.structured["entities"]) == RANKED_AT_MOST + 1
    jsonschema.validate(answer.structured, SEARCH.output_schema)
    (note,) = answer.notes
    assert "at least" in note and "the most recent first" in note and "offset" in note


def test_pages_of_a_common_word_follow_one_another(memory: KnowledgeGraph) -> None:
    first = _names(_search(memory, query="coffee", limit=25))
    second = _names(_search(memory, query="coffee", limit=25, offset=25))
    assert len(first) == len(second) == 25
    assert not set(first) & set(second)
    both = _names(_search(memory, query="coffee", limit=50))
    assert both == first + second
    # A page with a limit is complete: nothing says more match beyond it.
    assert "truncated" not in _search(memory, query="coffee", limit=25).structured


def test_the_graph_asked_for_every_match_gets_every_match(memory: KnowledgeGraph) -> None:
    found = memory.search_nodes("coffee")
    assert len(found.entities) == MANY + 1
    assert found.entities[0].name == "Coffee Club"


def test_a_type_filter_keeps_the_walk_to_that_type(memory: KnowledgeGraph) -> None:
    # More than RANKED_AT_MOST robots hold the word: they too come newest first.
    names = _names(_search(memory, query="coffee", entityType="robot", limit=60))
    assert len(names) == 60
    assert all(int(name.split("-")[1]) % 40 != 1 for name in names)
    assert names == sorted(names, key=lambda name: -int(name.split("-")[1]))
    # Fewer persons do: all ranked by score, and equal scores in creation order, oldest first.
    persons = _search(memory, query="coffee", entityType="person")
    assert "truncated" not in persons.structured
    assert _names(persons) == [f"person-{i}" for i in range(MANY) if i % 40 == 1]


def test_a_word_in_fewer_entities_is_still_ranked_by_score(memory: KnowledgeGraph) -> None:
    # "daily" is in a tenth of them: all scored, the name-free matches by score then age.
    answer = _search(memory, query="daily")
    assert "atLeast" not in answer.structured.get("truncated", {})
    assert _names(answer)[0] == "person-0"


def test_words_each_in_thousands_are_scored_among_the_newest_that_hold_them(memory: KnowledgeGraph) -> None:
    # No entity contains "coffee drinks" as written; both words are in every person.
    answer = _search(memory, query="coffee drinks")
    names = _names(answer)
    assert len(names) == 50  # the word matches a search without a limit adds
    numbers = [int(name.split("-")[1]) for name in names]
    assert min(numbers) >= MANY - 250  # from the newest, not the whole memory
    # Those that say "coffee" twice score higher and come first.
    twice = [n for n in numbers if n % 10 == 0]
    assert numbers[: len(twice)] == twice and twice


def test_a_rare_word_ranks_its_entity_first_and_the_common_words_take_the_newest(tmp_path: Path) -> None:
    # "zed" is one entity's name; "alpha" and "beta" are each in more than RANKED_AT_MOST
    # entities (and fewer than half, so they still count). Once "zed" is scored, the other
    # nine come from the newest holding both (four looked at for each of the ten wanted),
    # not from ranking every one of them.
    holders = RANKED_AT_MOST + 200
    store = open_store(Settings(memory_path=tmp_path / "memory.db"))
    try:
        graph = KnowledgeGraph(store)
        entities = [Entity("Zed", "person", ("met alpha once",))]
        for i in range(2 * holders + 100):
            if i % 2 == 0 and i < 2 * holders:
                # A tenth say "alpha" twice: a higher score.
                observations = ("alpha beta", "alpha again") if i % 20 == 0 else ("alpha beta",)
            else:
                observations = ("gamma",)
            entities.append(Entity(f"thing-{i}", "thing", observations))
        graph.import_graph(entities, [])
        names = _names(_search(graph, query="Zed alpha beta", limit=10))
        assert names[0] == "Zed" and len(names) == 10
        numbers = [int(name.split("-")[1]) for name in names[1:]]
        newest_holder = 2 * holders - 2
        assert min(numbers) >= newest_holder - 2 * 4 * 10
        twice = [n for n in numbers if n % 20 == 0]
        assert numbers[: len(twice)] == twice and twice
    finally:
        store.close()


def test_a_search_whose_matches_are_smaller_than_the_memory_s_average_shows_all_that_fit(tmp_path: Path) -> None:
    # The first ranking names only as many entities as the memory's averages say the budget
    # shows; these matches are far smaller, so graphmem names more until the budget is full.
    store = open_store(Settings(memory_path=tmp_path / "memory.db"))
    try:
        graph = KnowledgeGraph(store)
        big = [
            Entity(f"big-{i}", "big", tuple(f"a long observation number {n} " * 4 for n in range(20)))
            for i in range(300)
        ]
        tiny = [Entity(f"t-{i}", "tiny", ()) for i in range(600)]
        graph.import_graph(big + tiny, [])
        answer = _search(graph, query="tiny")
        assert len(answer.structured["entities"]) == 600
        assert "truncated" not in answer.structured
    finally:
        store.close()
