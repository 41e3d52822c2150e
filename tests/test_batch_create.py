"""A batch of new entities: each keeps records of its own, however the graph builds them (issue 17, item 2)."""

from __future__ import annotations

import pytest

from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import history_of, records_of


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """A batch keeps its records alike on every backend."""
    return any_backend_settings


def test_entities_created_together_keep_their_own_records_and_history(graph: KnowledgeGraph):
    graph.create_entities(
        [
            Entity("A", "t", ("one", "two")),
            Entity("B", "t", ("three", "[S:Archived] four")),
            Entity("C", "t", ("five", "six")),
            Entity("D", "t", ("seven",)),
        ]
    )
    found = {entity.name: entity for entity in graph.open_nodes(["A", "B", "C", "D"]).entities}
    assert [(r.id, r.content) for r in records_of(found["A"])] == [("obs_1", "one"), ("obs_2", "two")]
    assert [(r.id, r.content) for r in records_of(found["C"])] == [("obs_1", "five"), ("obs_2", "six")]
    assert [(r.id, r.content) for r in records_of(found["D"])] == [("obs_1", "seven")]
    # The archived fact goes to B's history only.
    assert [r.content for r in records_of(found["B"])] == ["three"]
    assert [r.content for r in history_of(found["B"])] == ["[S:Archived] four"]
    assert not history_of(found["A"]) and not history_of(found["C"])


def test_changing_one_entity_of_a_batch_leaves_the_others_as_they_were(graph: KnowledgeGraph):
    created = graph.create_entities([Entity(name, "t", ("same", "facts")) for name in ("A", "B", "C")]).created
    graph.add_observations([ObservationAddition("B", ("more",))])
    found = {entity.name: entity for entity in graph.open_nodes(["A", "B", "C"]).entities}
    assert [r.content for r in records_of(found["B"])] == ["same", "facts", "more"]
    for name in ("A", "C"):
        assert [r.content for r in records_of(found[name])] == ["same", "facts"]
        assert found[name].extra == created[0].extra
    assert [r.content for r in records_of(created[1])] == ["same", "facts"]
