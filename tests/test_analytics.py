"""get_analytics (spec 001) on both backends and over MCP: the four metrics, the thread filter."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain import analytics, saving
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.saving import EntityDraft, RelationDraft
from graphmem.server import build_server
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The graph behaves alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


def _draft(name: str, targets: list[str], importance: float = 0.5) -> EntityDraft:
    return EntityDraft(
        name, "Person", ("Some fact here",), tuple(RelationDraft(t, "knows") for t in targets), importance=importance
    )


@pytest.fixture(params=["memory.db", "memory.jsonl"])
def graph(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeGraph]:
    store = open_store(Settings(memory_path=tmp_path / request.param))
    graph = KnowledgeGraph(store)
    saving.save_memory(graph, [_draft("Ana", ["Ben", "Cy"], 0.9), _draft("Ben", ["Ana"]), _draft("Cy", ["Ana"])], "t1")
    saving.save_memory(graph, [_draft("Dee", ["Ana"], 1.0)], "t2")
    graph.create_entities([Entity("Loner", "Person"), Entity("Broken", "Person")])
    graph.create_relations([Relation("Broken", "Ghost", "haunted_by")])
    yield graph
    graph.store.close()


def test_the_four_metrics_over_the_whole_memory(graph):
    graph.add_observations([ObservationAddition("Ben", ("Moved to Oslo",))])
    found = analytics.analytics(graph)
    assert found.recent_changes[0] == {
        "entityName": "Ben",
        "entityType": "Person",
        "lastModified": found.recent_changes[0]["lastModified"],
        "changeType": "updated",
    }
    assert [row["entityName"] for row in found.top_important[:2]] == ["Dee", "Ana"]
    top = found.most_connected[0]
    assert top["entityName"] == "Ana" and top["relationCount"] == 5
    assert sorted(top["connectedTo"]) == ["Ben", "Cy", "Dee"]
    assert {(row["entityName"], row["reason"]) for row in found.orphaned_entities} == {
        ("Loner", "no_relations"),
        ("Broken", "broken_relation"),
    }
    assert found.orphan_counts == {"noRelations": 1, "danglingNames": 1}


def test_a_thread_sees_only_its_entities(graph):
    found = analytics.analytics(graph, "t2")
    assert [row["entityName"] for row in found.recent_changes] == ["Dee"]
    assert [row["entityName"] for row in found.most_connected] == ["Dee"]
    assert found.orphaned_entities == []


def test_the_limit_caps_every_list(graph):
    found = analytics.analytics(graph, limit=2)
    assert all(len(rows) <= 2 for rows in (found.recent_changes, found.top_important, found.most_connected))


@pytest.mark.anyio
async def test_the_tool_answers_with_the_spec_shapes(settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await client.call_tool(
            "save_memory",
            {
                "entities": [
                    {
                        "name": "Ana",
                        "entityType": "Person",
                        "observations": ["Lives in Oslo"],
                        "relations": [{"targetEntity": "Ben", "relationType": "knows"}],
                    },
                    {
                        "name": "Ben",
                        "entityType": "Person",
                        "observations": ["Lives in Rome"],
                        "relations": [{"targetEntity": "Ana", "relationType": "knows"}],
                    },
                ],
                "threadId": "chat-1",
            },
        )
        result = await client.call_tool("get_analytics", {"threadId": "chat-1"})
        listing = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert not result.is_error
    jsonschema.validate(result.structured_content, listing["get_analytics"].output_schema)
    assert {row["entityName"] for row in result.structured_content["recent_changes"]} == {"Ana", "Ben"}
    assert result.structured_content["most_connected"][0]["relationCount"] == 2
