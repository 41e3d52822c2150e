"""Who made each change (issue 18, item 4): the domain records the author it is given, on every backend.

The server enters `KnowledgeGraph.authored_by(name)` around a call made with a named
token; here the domain is driven directly, on a SQLite and a JSONL memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain import analytics, maintenance, navigation, saving
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.saving import EntityDraft, RelationDraft
from graphmem.storage import open_store


@pytest.fixture
def graph(any_backend_settings: Settings) -> Iterator[KnowledgeGraph]:
    store = open_store(any_backend_settings)
    yield KnowledgeGraph(store)
    store.close()


def extra_of(graph: KnowledgeGraph, name: str) -> dict:
    (entity,) = graph.open_nodes([name]).entities
    return dict(entity.extra or {})


def test_a_change_made_by_a_named_token_records_its_name_on_the_entity_the_relation_and_the_fact(graph):
    with graph.authored_by("alice"):
        graph.create_entities([Entity("Ada", "Person", ("wrote notes",)), Entity("Bea", "Person")])
        graph.create_relations([Relation("Ada", "Bea", "knows")])
    extra = extra_of(graph, "Ada")
    assert extra["createdBy"] == "alice" and "updatedBy" not in extra
    assert extra["observationMeta"][0]["author"] == "alice"
    (relation,) = graph.read_graph().relations
    assert (relation.extra or {})["createdBy"] == "alice"


def test_a_later_change_by_another_names_them_as_updater_and_author_of_the_new_fact_only(graph):
    with graph.authored_by("alice"):
        graph.create_entities([Entity("Ada", "Person", ("wrote notes",))])
    with graph.authored_by("bob"):
        graph.add_observations([ObservationAddition("Ada", ("ran the lab",), ("obs_1",))])
    extra = extra_of(graph, "Ada")
    assert (extra["createdBy"], extra["updatedBy"]) == ("alice", "bob")
    _, chain = navigation.observation_history(graph, "Ada", "obs_2")
    assert [(record.id, record.author) for record in chain] == [("obs_1", "alice"), ("obs_2", "bob")]
    assert [record.to_wire().get("author") for record in chain] == ["alice", "bob"]


def test_a_change_with_no_author_writes_no_author_key_and_clears_the_last_updater(graph, tmp_path: Path):
    graph.create_entities([Entity("Ada", "Person", ("wrote notes",))])
    assert not {"createdBy", "updatedBy"} & set(extra_of(graph, "Ada"))
    assert "author" not in extra_of(graph, "Ada")["observationMeta"][0]
    with graph.authored_by("bob"):
        maintenance.update_entities(graph, [maintenance.EntityUpdate("Ada", entity_type="Scientist")])
    assert extra_of(graph, "Ada")["updatedBy"] == "bob"
    # An unnamed change after bob's: the entity must not go on naming bob as its last updater.
    graph.add_observations([ObservationAddition("Ada", ("ran the lab",))])
    assert "updatedBy" not in extra_of(graph, "Ada")
    if graph.store.__class__.__name__.lower().startswith("jsonl"):
        lines = (tmp_path / "memory.jsonl").read_text(encoding="utf-8")
        assert "createdBy" not in lines and '"author"' not in lines


def test_save_memory_and_the_analytics_of_recent_changes_name_who_changed_what(graph):
    with graph.authored_by("bob"):
        graph.create_entities([Entity("Bea", "Person")])
    with graph.authored_by("alice"):
        saving.save_memory(
            graph, [EntityDraft("Ada", "Person", ("Wrote the first program",), (RelationDraft("Bea", "knows"),))], "t1"
        )
    with graph.authored_by("bob"):
        saving.save_memory(
            graph, [EntityDraft("Ada", "Person", ("Studied mathematics",), (RelationDraft("Bea", "knows"),))], "t1"
        )
    graph.create_entities([Entity("Cy", "Person")])
    recent = {change["entityName"]: change for change in analytics.analytics(graph).recent_changes}
    assert (recent["Ada"]["changeType"], recent["Ada"]["by"]) == ("updated", "bob")
    assert (recent["Bea"]["changeType"], recent["Bea"]["by"]) == ("created", "bob")
    assert "by" not in recent["Cy"]


def test_the_author_is_only_for_the_block_it_was_given(graph):
    with graph.authored_by("alice"):
        pass
    graph.create_entities([Entity("Ada", "Person")])
    assert "createdBy" not in extra_of(graph, "Ada")
    assert json.dumps(extra_of(graph, "Ada"))  # still plain JSON
