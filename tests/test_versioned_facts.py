"""Observations as records and versioned facts (specs 001 and 003), on both backends and over MCP."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion
from graphmem.domain import navigation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import records_of
from graphmem.server import build_server
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The graph behaves alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


@pytest.fixture(params=["memory.db", "memory.jsonl"])
def graph(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeGraph]:
    store = open_store(Settings(memory_path=tmp_path / request.param))
    graph = KnowledgeGraph(store)
    graph.create_entities([Entity("Python Scripts", "CodeArtifact", ("Uses python-docx 1.1.0", "Uses lxml 6.0.2"))])
    yield graph
    store.close()


def _current(graph: KnowledgeGraph) -> Entity:
    return graph.open_nodes(["Python Scripts"]).entities[0]


def test_every_observation_gets_a_stable_id_and_version(graph):
    records = records_of(_current(graph))
    assert [(r.id, r.content, r.version) for r in records] == [
        ("obs_1", "Uses python-docx 1.1.0", 1),
        ("obs_2", "Uses lxml 6.0.2", 1),
    ]
    graph.add_observations([ObservationAddition("Python Scripts", ("Runs on Windows",))])
    assert [r.id for r in records_of(_current(graph))] == ["obs_1", "obs_2", "obs_3"]


def test_a_correction_supersedes_the_old_fact_which_stays_in_history(graph):
    graph.add_observations([ObservationAddition("Python Scripts", ("Uses python-docx 1.2.0",), ("obs_1",))])
    current = _current(graph)
    # The read tools show the current facts only.
    assert current.observations == ("Uses lxml 6.0.2", "Uses python-docx 1.2.0")
    name, chain = navigation.observation_history(graph, "Python Scripts", "obs_3")
    assert name == "Python Scripts"
    assert [(r.id, r.content, r.version) for r in chain] == [
        ("obs_1", "Uses python-docx 1.1.0", 1),
        ("obs_3", "Uses python-docx 1.2.0", 2),
    ]
    assert chain[0].superseded_by == "obs_3" and chain[1].supersedes == "obs_1"
    # Asking from the old version gives the same chain.
    assert navigation.observation_history(graph, "Python Scripts", "obs_1")[1] == chain
    # The official substring search no longer finds the old version.
    with graph.store.read():
        assert graph.store.find_text("python-docx 1.1.0") == {}


def test_superseding_an_unknown_id_fails_whole(graph):
    with pytest.raises(InvalidInputError, match="'obs_9', which is not a current observation"):
        graph.add_observations(
            [ObservationAddition("Python Scripts", ("New fact here", "Another one"), (None, "obs_9"))]
        )
    assert _current(graph).observations == ("Uses python-docx 1.1.0", "Uses lxml 6.0.2")


def test_archived_observations_are_kept_but_never_shown(graph):
    graph.add_observations([ObservationAddition("Python Scripts", ("[S:Archived] Used Python 2",))])
    assert "[S:Archived] Used Python 2" not in _current(graph).observations
    history = [r for r in navigation.observation_history(graph, "Python Scripts", "obs_3")[1]]
    assert history[0].content == "[S:Archived] Used Python 2" and not history[0].current


def test_deleting_a_fact_removes_its_record_and_raises_the_entity_version(graph):
    graph.delete_observations([ObservationDeletion("Python Scripts", ("Uses lxml 6.0.2",))])
    entity = _current(graph)
    assert [r.id for r in records_of(entity)] == ["obs_1"]
    assert entity.extra is not None and entity.extra["version"] == 2


def test_a_legacy_entity_without_records_gets_the_same_ids_every_time(graph):
    graph.import_graph([Entity("Old", "t", ("first fact", "second fact"))], [])
    old = graph.open_nodes(["Old"]).entities[0]
    assert [r.id for r in records_of(old)] == ["obs_1", "obs_2"]
    graph.add_observations([ObservationAddition("Old", ("second fact v2",), ("obs_2",))])
    chain = navigation.observation_history(graph, "Old", "obs_2")[1]
    assert [r.id for r in chain] == ["obs_2", "obs_3"]


@pytest.mark.anyio
async def test_the_history_tool_and_supersedes_through_the_mcp_client(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.jsonl", toolset="all")
    async with Client(build_server(dataclasses.replace(settings)), mode="legacy") as client:
        await client.call_tool(
            "create_entities",
            {"entities": [{"name": "P", "entityType": "Code", "observations": ["Uses python-docx 1.1.0"]}]},
        )
        added = await client.call_tool(
            "add_observations",
            {"observations": [{"entityName": "P", "contents": ["Uses python-docx 1.2.0"], "supersedes": ["obs_1"]}]},
        )
        assert not added.is_error
        result = await client.call_tool("get_observation_history", {"entityName": "P", "observationId": "obs_2"})
        listing = {tool.name: tool for tool in (await client.list_tools()).tools}
        jsonschema.validate(result.structured_content, listing["get_observation_history"].output_schema)
        history = result.structured_content["history"]
        assert [(item["id"], item["content"]) for item in history] == [
            ("obs_1", "Uses python-docx 1.1.0"),
            ("obs_2", "Uses python-docx 1.2.0"),
        ]
        assert result.structured_content["currentId"] == "obs_2"
        opened = (await client.call_tool("open_nodes", {"names": ["P"]})).structured_content
        assert opened["entities"][0]["observations"] == ["Uses python-docx 1.2.0"]
    # The official keys of the line hold the current facts as plain strings.
    line = json.loads((tmp_path / "memory.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert line["observations"] == ["Uses python-docx 1.2.0"]


def test_merge_and_upsert_keep_the_target_ids_and_give_moved_facts_new_ones(graph):
    from graphmem.domain import maintenance

    graph.create_entities([Entity("Scripts", "CodeArtifact", ("Uses lxml 6.0.2", "Runs nightly"))])
    maintenance.merge_entities(graph, "Scripts", "Python Scripts")
    maintenance.upsert_entities(graph, [Entity("Python Scripts", "x", ("Has tests",))])
    records = records_of(_current(graph))
    assert [(r.id, r.content) for r in records] == [
        ("obs_1", "Uses python-docx 1.1.0"),
        ("obs_2", "Uses lxml 6.0.2"),
        ("obs_3", "Runs nightly"),
        ("obs_4", "Has tests"),
    ]


def test_observations_imported_without_records_continue_the_ids(graph):
    graph.add_observations([ObservationAddition("Python Scripts", ("Runs nightly",))])
    graph.import_graph([Entity("Python Scripts", "CodeArtifact", ("Imported fact",))], [])
    assert [r.id for r in records_of(_current(graph))] == ["obs_1", "obs_2", "obs_3", "obs_4"]


def test_an_imported_archived_fact_is_kept_in_history_and_not_shown(graph):
    graph.import_graph([Entity("Old", "t", ("[S:Archived] Lived in Rome", "Lives in Oslo"))], [])
    old = graph.open_nodes(["Old"]).entities[0]
    assert old.observations == ("Lives in Oslo",)
    assert [r.content for r in navigation.observation_history(graph, "Old", "obs_1")[1]] == [
        "[S:Archived] Lived in Rome"
    ]
