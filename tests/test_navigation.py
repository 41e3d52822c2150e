"""Lookups and traversals on both backends: aliases, shortest and all paths checked against networkx, bounds."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import networkx
import pytest

from graphmem.config import Settings
from graphmem.core.errors import EntityNotFoundError, InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.domain import navigation, traversal
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The graph behaves alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


@pytest.fixture(params=["memory.db", "memory.jsonl"])
def graph(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeGraph]:
    store = open_store(Settings(memory_path=tmp_path / request.param))
    yield KnowledgeGraph(store)
    store.close()


def _people(graph: KnowledgeGraph, *names: str) -> None:
    graph.create_entities([Entity(name, "person") for name in names])


def _link(graph: KnowledgeGraph, *triples: tuple[str, str, str]) -> None:
    graph.create_relations([Relation(*triple) for triple in triples])


def test_describe_lists_each_relation_with_its_direction_and_the_neighbours(graph):
    _people(graph, "Alice", "Bob", "Carol")
    _link(graph, ("Alice", "Bob", "knows"), ("Carol", "Alice", "mentors"), ("Alice", "Alice", "talks_to"))
    described = navigation.describe(graph, "Alice")
    assert [(r.key, d) for r, d in described.relations] == [
        (("Alice", "Bob", "knows"), "outgoing"),
        (("Carol", "Alice", "mentors"), "incoming"),
        (("Alice", "Alice", "talks_to"), "self"),
    ]
    assert described.neighbours == ("Bob", "Carol")
    assert described.degree == 3


def test_a_missing_name_is_an_error_that_says_how_to_find_the_right_one(graph):
    with pytest.raises(EntityNotFoundError, match="Entity with name Nobody not found. Names are exact"):
        navigation.describe(graph, "Nobody")
    with pytest.raises(EntityNotFoundError, match="search_nodes"):
        traversal.shortest_path(graph, "Nobody", "Else", 3, most_depth=12)


def test_batch_get_keeps_the_order_and_gives_none_for_a_missing_name(graph):
    _people(graph, "Alice", "Bob")
    found = navigation.batch_get(graph, ["Bob", "Ghost", "Alice", "Bob"])
    assert [None if entity is None else entity.name for entity in found] == ["Bob", None, "Alice", "Bob"]


def test_aliases_are_resolved_wherever_a_name_is_looked_up(graph):
    graph.import_graph([Entity("Robert Smith", "person", (), {"aliases": ["Bob"]}), Entity("Acme", "company")], [])
    _link(graph, ("Robert Smith", "Acme", "works_at"))
    assert navigation.get_entity(graph, "Bob").name == "Robert Smith"
    assert traversal.shortest_path(graph, "Bob", "Acme", 3, most_depth=12).names == ("Robert Smith", "Acme")
    relations, total = navigation.relations_matching(graph, "Bob", None, None)
    assert total == 1 and relations[0].from_ == "Robert Smith"


def test_type_counts_come_most_common_first_then_by_name(graph):
    graph.create_entities([Entity("a", "tool"), Entity("b", "person"), Entity("c", "person"), Entity("d", "city")])
    _link(graph, ("a", "b", "uses"), ("c", "b", "knows"), ("b", "c", "knows"))
    with graph.store.read():
        assert graph.store.entity_type_counts() == [("person", 2), ("city", 1), ("tool", 1)]
        assert graph.store.relation_type_counts() == [("knows", 2), ("uses", 1)]


def test_relations_matching_filters_on_every_given_field_and_pages(graph):
    _people(graph, "A", "B", "C")
    _link(graph, ("A", "B", "knows"), ("A", "C", "knows"), ("A", "C", "likes"), ("B", "C", "knows"))
    relations, total = navigation.relations_matching(graph, "A", None, "knows")
    assert total == 2 and [r.key for r in relations] == [("A", "B", "knows"), ("A", "C", "knows")]
    relations, total = navigation.relations_matching(graph, None, "C", None, offset=1, limit=1)
    assert total == 3 and [r.key for r in relations] == [("A", "C", "likes")]
    # Empty fields match anything, as spec 004 says.
    assert navigation.relations_matching(graph, "", "", "")[1] == 4


def test_neighbours_follow_relations_both_ways_level_by_level(graph):
    _people(graph, "A", "B", "C", "D")
    _link(graph, ("A", "B", "knows"), ("C", "B", "knows"), ("C", "D", "likes"))
    around = traversal.neighbourhood(graph, ["A"], 2, max_depth=5)
    assert around.names == ("B", "C")
    assert around.distances == {"A": 0, "B": 1, "C": 2}
    assert around.bound is None
    assert traversal.neighbourhood(graph, ["B"], 1, direction="outgoing", max_depth=5).names == ()
    assert traversal.neighbourhood(graph, ["B"], 1, direction="incoming", max_depth=5).names == ("A", "C")
    assert traversal.neighbourhood(graph, ["C"], 1, direction="outgoing", max_depth=5).names == ("B", "D")
    typed = traversal.neighbourhood(graph, ["C"], 3, relation_type="knows", max_depth=5)
    assert typed.names == ("B", "A")


def test_a_depth_past_the_maximum_is_refused(graph):
    _people(graph, "A")
    with pytest.raises(InvalidInputError, match="depth.*from 0 to 5"):
        traversal.neighbourhood(graph, ["A"], 6, max_depth=5)


def test_traversals_pass_through_names_that_are_not_entities(graph):
    _people(graph, "A", "C")
    _link(graph, ("A", "ghost", "haunts"), ("ghost", "C", "haunts"))
    path = traversal.shortest_path(graph, "A", "C", 4, most_depth=12)
    assert path.names == ("A", "ghost", "C")
    sub = traversal.subgraph(graph, ["A"], 2, max_depth=5)
    assert [e.name for e in sub.graph.entities] == ["A", "C"]


def test_no_path_says_whether_a_bound_stopped_the_search(graph):
    _people(graph, "A", "B", "C", "D", "Island")
    _link(graph, ("A", "B", "r"), ("B", "C", "r"), ("C", "D", "r"))
    assert traversal.shortest_path(graph, "A", "D", 2, most_depth=12).bound == traversal.Bound("maxDepth", 2)
    unreachable = traversal.shortest_path(graph, "A", "Island", 6, most_depth=12)
    assert not unreachable.found and unreachable.bound is None


def test_each_hop_of_a_path_has_a_relation_linking_its_names_in_its_own_direction(graph):
    _people(graph, "A", "B", "C")
    _link(graph, ("A", "B", "knows"), ("C", "B", "employs"))
    path = traversal.shortest_path(graph, "A", "C", 4, most_depth=12)
    assert path.names == ("A", "B", "C")
    assert [r.key for r in path.relations] == [("A", "B", "knows"), ("C", "B", "employs")]


def _random_graph(graph: KnowledgeGraph, seed: int, size: int = 40, edges: int = 60) -> networkx.Graph:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(size)]
    graph.create_entities([Entity(name, "node") for name in names])
    triples = {(rng.choice(names), rng.choice(names), rng.choice(["a", "b"])) for _ in range(edges)}
    _link(graph, *triples)
    reference = networkx.Graph()
    reference.add_nodes_from(names)
    reference.add_edges_from((f, t) for f, t, _ in triples if f != t)
    return reference


@pytest.mark.parametrize("seed", range(8))
def test_shortest_paths_are_as_short_as_networkx_finds_and_real(graph, seed):
    reference = _random_graph(graph, seed)
    rng = random.Random(seed + 100)
    for _ in range(15):
        start, end = rng.sample(sorted(reference.nodes), 2)
        found = traversal.shortest_path(graph, start, end, 12, most_depth=12)
        if networkx.has_path(reference, start, end):
            assert len(found.names) - 1 == networkx.shortest_path_length(reference, start, end)
            for (a, b), relation in zip(zip(found.names, found.names[1:], strict=False), found.relations, strict=True):
                assert {relation.from_, relation.to} == {a, b}
        else:
            assert not found.found and found.bound is None


@pytest.mark.parametrize("seed", range(4))
def test_all_paths_are_networkx_simple_paths_shortest_first(graph, seed):
    reference = _random_graph(graph, seed, size=15, edges=30)
    rng = random.Random(seed)
    start, end = rng.sample(sorted(reference.nodes), 2)
    found = traversal.all_paths(graph, start, end, 4, 1000, most_depth=8)
    expected = {tuple(p) for p in networkx.all_simple_paths(reference, start, end, cutoff=4)}
    got = [names for names, _ in found.paths]
    assert set(got) == expected
    assert [len(p) for p in got] == sorted(len(p) for p in got)
    assert found.bound is None


def test_all_paths_stop_at_max_paths_and_say_so(graph):
    _people(graph, "A", "Z", *[f"m{i}" for i in range(5)])
    _link(graph, *[("A", f"m{i}", "r") for i in range(5)], *[(f"m{i}", "Z", "r") for i in range(5)])
    found = traversal.all_paths(graph, "A", "Z", 4, 3, most_depth=8)
    assert len(found.paths) == 3 and found.bound == traversal.Bound("maxPaths", 3)


def test_a_traversal_stops_at_the_node_cap_and_says_so(graph, monkeypatch):
    monkeypatch.setattr(traversal, "MAX_VISITED", 10)
    _people(graph, "hub", *[f"leaf{i}" for i in range(30)])
    _link(graph, *[("hub", f"leaf{i}", "r") for i in range(30)])
    around = traversal.neighbourhood(graph, ["hub"], 1, max_depth=5)
    assert len(around.names) == 9 and around.bound == traversal.Bound("maxNodes", 10)


def test_subgraph_keeps_only_relations_with_both_ends_inside_and_reports_unknown_names(graph):
    _people(graph, "A", "B", "C")
    _link(graph, ("A", "B", "r"), ("B", "C", "r"))
    sub = traversal.subgraph(graph, ["A", "Nope"], 1, max_depth=5)
    assert [e.name for e in sub.graph.entities] == ["A", "B"]
    assert [r.key for r in sub.graph.relations] == [("A", "B", "r")]
    assert sub.not_found == ("Nope",)
