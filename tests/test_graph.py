"""KnowledgeGraph's rules, on a real SQLite file."""

from __future__ import annotations

import pytest

from graphmem.config import Settings
from graphmem.core.errors import DanglingRelationError, EntityNotFoundError, InvalidInputError
from graphmem.core.limits import Limits
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion, Relation
from graphmem.domain.graph import KnowledgeGraph


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The graph behaves alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


def test_duplicates_within_one_batch_are_stored_once_and_the_first_wins(graph):
    result = graph.create_entities([Entity("D", "first", ("a", "a")), Entity("D", "second", ("b",))])
    assert result.created == (Entity("D", "first", ("a",)),)
    assert result.skipped == ("D",)
    assert graph.read_graph().entities == (Entity("D", "first", ("a",)),)


def test_an_existing_entity_is_skipped_and_keeps_its_observations(graph):
    graph.create_entities([Entity("A", "t", ("old",))])
    result = graph.create_entities([Entity("A", "other", ("new",))])
    assert result.created == () and result.skipped == ("A",)
    assert graph.open_nodes(["A"]).entities == (Entity("A", "t", ("old",)),)


def test_relations_to_missing_entities_are_saved_and_reported(graph):
    graph.create_entities([Entity("A", "t")])
    result = graph.create_relations([Relation("A", "Zed", "knows")])
    assert result.created == (Relation("A", "Zed", "knows"),)
    assert result.missing_entities == ("Zed",)


def test_strict_mode_rejects_a_batch_with_a_missing_endpoint_whole(graph):
    strict = KnowledgeGraph(graph.store, strict=True)
    strict.create_entities([Entity("A", "t"), Entity("B", "t")])
    with pytest.raises(DanglingRelationError) as raised:
        strict.create_relations([Relation("A", "B", "knows"), Relation("A", "Zed", "knows")])
    assert str(raised.value).startswith("Entity with name Zed not found")
    assert strict.read_graph().relations == ()


def test_add_observations_sees_earlier_items_of_the_same_batch(graph):
    graph.create_entities([Entity("A", "t")])
    results = graph.add_observations([ObservationAddition("A", ("x", "y")), ObservationAddition("A", ("y", "z"))])
    assert [r.added_observations for r in results] == [("x", "y"), ("z",)]


def test_add_observations_on_a_missing_entity_saves_nothing(graph):
    graph.create_entities([Entity("A", "t")])
    with pytest.raises(EntityNotFoundError, match="^Entity with name Nobody not found"):
        graph.add_observations([ObservationAddition("A", ("x",)), ObservationAddition("Nobody", ("y",))])
    assert graph.open_nodes(["A"]).entities[0].observations == ()


def test_delete_entities_removes_their_relations_and_reports_missing_names(graph):
    graph.create_entities([Entity("A", "t"), Entity("B", "t")])
    graph.create_relations([Relation("A", "B", "knows"), Relation("B", "Ghost", "knows")])
    outcome = graph.delete_entities(["B", "Zed", "B"])
    assert (outcome.requested, outcome.deleted, outcome.missing_entities) == (2, 1, ("Zed",))
    assert graph.read_graph().relations == ()


def test_delete_observations_counts_what_matched(graph):
    graph.create_entities([Entity("A", "t", ("x", "y"))])
    outcome = graph.delete_observations([ObservationDeletion("A", ("x", "nope")), ObservationDeletion("Zed", ("q",))])
    assert (outcome.requested, outcome.deleted, outcome.missing_entities) == (3, 1, ("Zed",))
    assert graph.open_nodes(["A"]).entities[0].observations == ("y",)


def test_delete_relations_counts_what_matched(graph):
    graph.create_relations([Relation("A", "B", "knows")])
    outcome = graph.delete_relations([Relation("A", "B", "knows"), Relation("A", "B", "likes")])
    assert (outcome.requested, outcome.deleted) == (2, 1)


def test_open_nodes_is_exact_and_returns_relations_touching_either_end(graph):
    graph.create_entities([Entity("A", "t"), Entity("B", "t"), Entity("C", "t")])
    graph.create_relations([Relation("A", "B", "knows"), Relation("B", "C", "knows")])
    result = graph.open_nodes(["C", "a", "Nobody"])
    assert [e.name for e in result.entities] == ["C"]
    assert result.relations == (Relation("B", "C", "knows"),)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda g: g.create_entities([Entity("x" * 1001, "t")]), "entities[0].name"),
        (lambda g: g.create_entities([Entity("A", "t", ("o" * 10_001,))]), "entities[0].observations[0]"),
        (lambda g: g.create_entities([Entity(f"e{i}", "t") for i in range(1001)]), "entities"),
        (lambda g: g.create_relations([Relation("A", "B", "r" * 1001)]), "relations[0].relationType"),
        (lambda g: g.search_nodes("q" * 2049), "query"),
        (lambda g: g.open_nodes(["\ud800"]), "names[0]"),
        (lambda g: g.add_observations([ObservationAddition("A", ("bad \udfff",))]), "observations[0].contents[0]"),
    ],
)
def test_input_over_a_limit_or_not_valid_text_is_refused_naming_the_field(graph, call, field):
    with pytest.raises(InvalidInputError) as raised:
        call(graph)
    assert raised.value.field == field
    assert field in str(raised.value)
    assert graph.counts().entities == 0


def test_limits_are_configurable(graph):
    small = KnowledgeGraph(graph.store, limits=Limits(max_batch_items=2))
    with pytest.raises(InvalidInputError, match="over the limit of 2"):
        small.create_entities([Entity("a", "t"), Entity("b", "t"), Entity("c", "t")])


def test_import_merges_observations_into_existing_entities_and_skips_known_relations(graph):
    graph.create_entities([Entity("A", "t", ("x",))])
    graph.create_relations([Relation("A", "B", "knows")])
    new = graph.import_graph(
        [Entity("A", "t", ("x", "y")), Entity("B", "t", ("z",)), Entity("B", "t", ("w",))],
        [Relation("A", "B", "knows"), Relation("B", "A", "knows")],
    )
    assert new == (1, 1)
    assert graph.open_nodes(["A"]).entities[0].observations == ("x", "y")
    assert graph.open_nodes(["B"]).entities[0].observations == ("z", "w")


def test_extra_keys_from_other_formats_survive_storage(graph):
    graph.import_graph([Entity("A", "t", (), {"aliases": ["Ay"], "version": 2})], [])
    assert graph.open_nodes(["A"]).entities[0].extra == {"aliases": ["Ay"], "version": 2}
