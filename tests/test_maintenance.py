"""Maintenance on both backends: aliases, rename, upsert, merge, relation updates, compact; all or nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.core.errors import EntityNotFoundError, InvalidInputError, RelationNotFoundError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion, Relation
from graphmem.domain import maintenance
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.maintenance import EntityUpdate, RelationUpdate
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The graph behaves alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


@pytest.fixture(params=["memory.db", "memory.jsonl"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], KnowledgeGraph]]:
    opened = []

    def _open() -> KnowledgeGraph:
        store = open_store(Settings(memory_path=tmp_path / request.param))
        opened.append(store)
        return KnowledgeGraph(store)

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def graph(reopen: Callable[[], KnowledgeGraph]) -> KnowledgeGraph:
    graph = reopen()
    graph.create_entities(
        [
            Entity("Alice", "person", ("Likes tea",)),
            Entity("Bob", "person", ("Plays go",)),
            Entity("Robert", "person", ("Plays go", "Lives in Oslo")),
            Entity("Acme", "company"),
        ]
    )
    graph.create_relations(
        [
            Relation("Alice", "Acme", "works_at"),
            Relation("Bob", "Acme", "works_at"),
            Relation("Robert", "Acme", "works_at"),
            Relation("Robert", "Bob", "same_as"),
            Relation("Alice", "Robert", "knows"),
            Relation("Alice", "Alice", "talks_to"),
        ]
    )
    return graph


def _keys(graph: KnowledgeGraph) -> set[tuple[str, str, str]]:
    return {relation.key for relation in graph.read_graph().relations}


def test_aliases_resolve_in_the_official_lookups_and_creates(graph):
    maintenance.update_entities(graph, [EntityUpdate("Alice", aliases=("Ali", "A."))])
    assert [e.name for e in graph.open_nodes(["Ali"]).entities] == ["Alice"]
    graph.add_observations([ObservationAddition("A.", ("Drinks coffee too",))])
    graph.delete_observations([ObservationDeletion("Ali", ("Likes tea",))])
    graph.create_relations([Relation("Ali", "Bob", "knows")])
    assert graph.open_nodes(["Alice"]).entities[0].observations == ("Drinks coffee too",)
    assert ("Alice", "Bob", "knows") in _keys(graph)
    assert [e.name for e in graph.search_nodes("Ali").entities][0] == "Alice"


def test_an_alias_that_names_another_entity_is_refused_and_nothing_changes(graph):
    maintenance.update_entities(graph, [EntityUpdate("Bob", aliases=("Bobby",))])
    for alias in ("Robert", "Bobby"):
        with pytest.raises(InvalidInputError, match="already names the entity"):
            maintenance.update_entities(graph, [EntityUpdate("Alice", entity_type="human", aliases=(alias,))])
    assert graph.open_nodes(["Alice"]).entities[0].entity_type == "person"


def test_a_rename_moves_every_relation_keeps_the_old_name_as_alias_and_raises_the_version(graph, reopen):
    (renamed,) = maintenance.update_entities(graph, [EntityUpdate("Alice", new_name="Alice Smith")])
    assert renamed.aliases == ("Alice",) and renamed.extra is not None and renamed.extra["version"] == 2
    keys = _keys(reopen())
    assert {("Alice Smith", "Acme", "works_at"), ("Alice Smith", "Robert", "knows")} <= keys
    assert ("Alice Smith", "Alice Smith", "talks_to") in keys
    assert not any("Alice" in (f, t) for f, t, _ in keys)
    assert [e.name for e in reopen().search_nodes("Smith").entities] == ["Alice Smith"]


def test_a_rename_onto_an_existing_name_fails_whole(graph):
    with pytest.raises(InvalidInputError, match="already names the entity 'Bob'"):
        maintenance.update_entities(
            graph, [EntityUpdate("Acme", entity_type="firm"), EntityUpdate("Alice", new_name="Bob")]
        )
    assert graph.open_nodes(["Acme"]).entities[0].entity_type == "company"


def test_updating_a_missing_entity_fails_whole(graph):
    with pytest.raises(EntityNotFoundError, match="Ghost"):
        maintenance.update_entities(graph, [EntityUpdate("Alice", entity_type="x"), EntityUpdate("Ghost", "y")])
    assert graph.open_nodes(["Alice"]).entities[0].entity_type == "person"


def test_merge_moves_observations_redirects_relations_and_drops_loops_and_repeats(graph, reopen):
    merged = maintenance.merge_entities(graph, "Robert", "Bob")
    assert (merged.moved_observations, merged.added_observations) == (2, 1)
    assert (merged.redirected_relations, merged.dropped_relations) == (1, 2)
    after = reopen()
    bob = after.open_nodes(["Robert"]).entities[0]
    assert bob.name == "Bob" and bob.observations == ("Plays go", "Lives in Oslo") and bob.aliases == ("Robert",)
    keys = _keys(after)
    assert ("Alice", "Bob", "knows") in keys and ("Bob", "Bob", "same_as") not in keys
    assert not any("Robert" in (f, t) for f, t, _ in keys)
    assert [e.name for e in after.read_graph().entities] == ["Alice", "Bob", "Acme"]


def test_a_merge_with_a_missing_side_changes_nothing(graph):
    before = graph.read_graph()
    with pytest.raises(EntityNotFoundError, match="Ghost"):
        maintenance.merge_entities(graph, "Robert", "Ghost")
    with pytest.raises(InvalidInputError, match="same entity"):
        maintenance.merge_entities(graph, "Bob", "Bob")
    assert graph.read_graph() == before


def test_upsert_creates_the_new_and_adds_only_missing_observations_keeping_the_type(graph):
    results = maintenance.upsert_entities(
        graph, [Entity("Bob", "robot", ("Plays go", "Sings")), Entity("Carol", "person", ("New",))]
    )
    assert [(r.name, r.created, r.added_observations) for r in results] == [
        ("Bob", False, ("Sings",)),
        ("Carol", True, ("New",)),
    ]
    bob = graph.open_nodes(["Bob"]).entities[0]
    assert bob.entity_type == "person" and bob.observations == ("Plays go", "Sings")


def test_update_relations_corrects_a_relation_and_raises_its_version(graph, reopen):
    (changed,) = maintenance.update_relations(
        graph, [RelationUpdate("Bob", "Acme", "works_at", new_relation_type="employed_by")]
    )
    assert changed.key == ("Bob", "Acme", "employed_by") and changed.extra is not None
    assert changed.extra["version"] == 2
    keys = _keys(reopen())
    assert ("Bob", "Acme", "employed_by") in keys and ("Bob", "Acme", "works_at") not in keys


def test_update_relations_fails_whole_on_a_missing_relation_or_a_collision(graph):
    before = _keys(graph)
    with pytest.raises(RelationNotFoundError, match="Relation Bob -likes-> Acme not found"):
        maintenance.update_relations(
            graph,
            [
                RelationUpdate("Alice", "Acme", "works_at", new_relation_type="x"),
                RelationUpdate("Bob", "Acme", "likes"),
            ],
        )
    with pytest.raises(InvalidInputError, match="exists already"):
        maintenance.update_relations(graph, [RelationUpdate("Robert", "Acme", "works_at", new_from="Bob")])
    assert _keys(graph) == before


def test_compact_gives_space_back_and_keeps_everything(graph, reopen):
    graph.create_entities([Entity(f"filler {i}", "thing", ("x" * 500,)) for i in range(300)])
    graph.delete_entities([f"filler {i}" for i in range(300)])
    before = graph.read_graph()
    done = maintenance.compact(graph)
    assert done.bytes_after <= done.bytes_before
    assert (done.entities, done.relations) == (4, 6)
    assert reopen().read_graph() == before
