"""Maintenance tools through the real MCP client: spec arguments, output schemas, errors that change nothing."""

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


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as connected:
        await connected.call_tool(
            "create_entities",
            {
                "entities": [
                    {"name": "Alice", "entityType": "person", "observations": ["Likes tea"]},
                    {"name": "Alicia", "entityType": "person", "observations": ["Likes tea", "Lives in Rome"]},
                    {"name": "Acme", "entityType": "company", "observations": []},
                ]
            },
        )
        await connected.call_tool(
            "create_relations",
            {
                "relations": [
                    {"from": "Alice", "to": "Acme", "relationType": "works_at"},
                    {"from": "Alicia", "to": "Alice", "relationType": "same_as"},
                ]
            },
        )
        yield connected


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    listing = {item.name: item for item in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, listing[tool].output_schema)
    return result.structured_content


async def _graph(client: Client) -> dict[str, Any]:
    return (await client.call_tool("read_graph", {})).structured_content


async def test_merge_entities_with_the_spec_arguments(client):
    merged = await _call(client, "merge_entities", {"source": "Alice", "target": "Alicia"})
    assert merged["movedObservations"] == 1 and merged["addedObservations"] == 0
    assert (merged["redirectedRelations"], merged["droppedRelations"]) == (1, 1)
    assert merged["entity"]["aliases"] == ["Alice"]
    graph = await _graph(client)
    assert [e["name"] for e in graph["entities"]] == ["Alicia", "Acme"]
    assert graph["relations"] == [{"from": "Alicia", "to": "Acme", "relationType": "works_at"}]


async def test_upsert_entities_with_the_spec_arguments(client):
    result = await _call(
        client,
        "upsert_entities",
        {"entities": [{"name": "Alice", "entityType": "person", "observations": ["new fact"]}]},
    )
    assert result == {"results": [{"name": "Alice", "created": False, "addedObservations": ["new fact"]}]}


async def test_update_entities_renames_and_the_old_name_still_opens_it(client):
    updated = await _call(client, "update_entities", {"entities": [{"name": "Acme", "newName": "Acme Corp"}]})
    renamed = updated["updated"][0]
    assert {key: renamed[key] for key in ("name", "entityType", "aliases", "version")} == {
        "name": "Acme Corp",
        "entityType": "company",
        "aliases": ["Acme"],
        "version": 2,
    }
    assert renamed["updatedAt"] >= renamed["createdAt"]
    opened = (await client.call_tool("open_nodes", {"names": ["Acme"]})).structured_content
    assert opened["entities"][0]["name"] == "Acme Corp"
    assert opened["relations"] == [{"from": "Alice", "to": "Acme Corp", "relationType": "works_at"}]


async def test_update_relations_and_compact(client):
    changed = await _call(
        client,
        "update_relations",
        {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at", "newRelationType": "founded"}]},
    )
    assert changed["updated"] == [{"from": "Alice", "to": "Acme", "relationType": "founded", "version": 2}]
    compacted = await _call(client, "compact", {})
    assert compacted["entities"] == 3 and compacted["bytesAfter"] > 0


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("merge_entities", {"source": "Ghost", "target": "Alice"}, "Entity with name Ghost not found"),
        ("update_entities", {"entities": [{"name": "Alice", "newName": "Alicia"}]}, "already names the entity"),
        ("update_entities", {"entities": [{"name": "Alice"}]}, "changes nothing"),
        ("update_relations", {"relations": [{"from": "A", "to": "B", "relationType": "x"}]}, "not found"),
        ("merge_entities", {"source": "Alice"}, "target"),
    ],
)
async def test_bad_calls_are_tool_errors_and_change_nothing(client, tool, arguments, expected):
    before = await _graph(client)
    result = await client.call_tool(tool, arguments)
    assert result.is_error and expected in result.content[0].text
    assert await _graph(client) == before
