"""The entity and traversal tools through the real MCP client: spec-004 arguments, schemas, budget, errors."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


pytestmark = pytest.mark.anyio

ENTITIES = [
    {"name": "Alice", "entityType": "person", "observations": ["Likes tea"]},
    {"name": "Bob", "entityType": "person", "observations": []},
    {"name": "Charlie", "entityType": "person", "observations": ["Plays chess"]},
    {"name": "Acme", "entityType": "company", "observations": []},
]
RELATIONS = [
    {"from": "Alice", "to": "Bob", "relationType": "knows"},
    {"from": "Bob", "to": "Charlie", "relationType": "knows"},
    {"from": "Alice", "to": "Acme", "relationType": "works_at"},
    {"from": "Charlie", "to": "Acme", "relationType": "works_at"},
]


async def _connect(settings: Settings, budget: int = 25_000) -> Client:
    return Client(build_server(dataclasses.replace(settings, toolset="all", response_budget=budget)), mode="legacy")


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with await _connect(settings) as connected:
        await connected.call_tool("create_entities", {"entities": ENTITIES})
        await connected.call_tool("create_relations", {"relations": RELATIONS})
        yield connected


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    listing = {item.name: item for item in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, listing[tool].output_schema)
    return result.structured_content


def _official(entity: dict[str, Any]) -> dict[str, Any]:
    return {key: entity[key] for key in ("name", "entityType", "observations")}


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_get_entity_and_batch_get_entities_with_the_spec_arguments(client):
    alice = await _call(client, "get_entity", {"name": "Alice"})
    assert _official(alice) == ENTITIES[0]
    # The richer tools show each observation as a record too, with its id (and its version once corrected).
    assert alice["observationRecords"][0] == {"id": "obs_1", "content": "Likes tea"}
    batch = await _call(client, "batch_get_entities", {"names": ["Alice", "Bob", "Ghost"]})
    assert [_official(entity) if entity else None for entity in batch["entities"]] == [ENTITIES[0], ENTITIES[1], None]


async def test_describe_entity_gives_relations_with_direction_neighbours_and_degree(client):
    described = await _call(client, "describe_entity", {"name": "Alice"})
    assert _official(described["entity"]) == ENTITIES[0]
    assert [r["direction"] for r in described["relations"]] == ["outgoing", "outgoing"]
    assert described["neighbors"] == ["Bob", "Acme"]
    assert described["degree"] == 2


async def test_type_listings_and_stats_count_what_is_in_memory(client, settings):
    types = await _call(client, "list_entity_types", {})
    assert types["types"] == [{"type": "person", "count": 3}, {"type": "company", "count": 1}]
    relation_types = await _call(client, "list_relation_types", {})
    assert relation_types["types"] == [{"type": "knows", "count": 2}, {"type": "works_at", "count": 2}]
    stats = await _call(client, "graph_stats", {})
    if settings.backend == "jsonl":
        # A JSONL file keeps no vectors: there is nothing to report about embedding.
        assert "embedding" not in stats
    else:
        # Search by meaning is on: four names and two observations, embedded or still waiting.
        embedding = stats.pop("embedding")
        assert embedding["done"] + embedding["waiting"] == 4 + 2
    assert stats == {"entities": 4, "relations": 4, "totalObservations": 2, "entityTypes": 2, "relationTypes": 2}


async def test_search_relations_with_from_to_and_relation_type(client):
    found = await _call(client, "search_relations", {"from": "Alice", "relationType": "knows"})
    assert found == {"relations": [RELATIONS[0]], "total": 1}
    assert (await _call(client, "search_relations", {"to": "Acme"}))["total"] == 2


async def test_find_path_and_its_spec_001_name_give_the_shortest_chain(client):
    for tool in ("find_path", "find_relation_path"):
        found = await _call(client, tool, {"from": "Bob", "to": "Acme"})
        assert found["found"] and found["length"] == 2
        assert found["path"][0] == "Bob" and found["path"][-1] == "Acme"


async def test_find_all_paths_lists_every_route_shortest_first(client):
    found = await _call(client, "find_all_paths", {"from": "Alice", "to": "Charlie", "maxDepth": 6, "maxPaths": 50})
    assert [p["path"] for p in found["paths"]] == [["Alice", "Bob", "Charlie"], ["Alice", "Acme", "Charlie"]]


async def test_extract_subgraph_and_get_neighbors_follow_relations_both_ways(client):
    sub = await _call(client, "extract_subgraph", {"names": ["Bob"], "depth": 1})
    assert [e["name"] for e in sub["entities"]] == ["Bob", "Alice", "Charlie"]
    assert len(sub["relations"]) == 2
    around = await _call(client, "get_neighbors", {"name": "Acme", "depth": 2})
    assert {e["name"]: e["distance"] for e in around["entities"]} == {"Alice": 1, "Charlie": 1, "Bob": 2}


async def test_a_hub_is_described_in_pages_within_the_budget(settings):
    async with await _connect(settings, budget=500) as client:
        leaves = [{"name": f"leaf {i}", "entityType": "thing", "observations": []} for i in range(200)]
        await client.call_tool(
            "create_entities", {"entities": [{"name": "hub", "entityType": "hub", "observations": []}, *leaves]}
        )
        await client.call_tool(
            "create_relations",
            {"relations": [{"from": "hub", "to": f"leaf {i}", "relationType": "has"} for i in range(200)]},
        )
        described = await _call(client, "describe_entity", {"name": "hub"})
        shown = len(described["relations"])
        assert 0 < shown < 200 and described["degree"] == 200
        assert described["truncated"] == {"omittedRelations": 200 - shown, "nextOffset": shown}
        following = await _call(client, "describe_entity", {"name": "hub", "offset": shown})
        assert following["relations"][0]["to"] == f"leaf {shown}"


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("get_entity", {"name": "Nobody"}, "Entity with name Nobody not found"),
        ("get_neighbors", {"name": "Alice", "depth": 9}, "depth"),
        ("find_path", {"from": "Alice"}, "to"),
        ("find_all_paths", {"from": "Alice", "to": "Bob", "maxPaths": 0}, "maxPaths"),
        ("get_neighbors", {"name": "Alice", "direction": "sideways"}, "direction"),
    ],
)
async def test_bad_arguments_are_tool_errors_that_name_the_problem(client, tool, arguments, expected):
    assert expected in await _error(client, tool, arguments)
