"""The nine official tools through the real MCP client, in process."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.anyio


async def test_create_entities_returns_the_created_entities_as_pretty_json(client):
    result = await client.call_tool(
        "create_entities",
        {"entities": [{"name": "Zoë", "entityType": "person", "observations": ["likes tea"]}]},
    )
    assert not result.is_error
    assert result.content[0].text == json.dumps(
        [{"name": "Zoë", "entityType": "person", "observations": ["likes tea"]}], indent=2, ensure_ascii=False
    )
    assert result.structured_content == {
        "entities": [{"name": "Zoë", "entityType": "person", "observations": ["likes tea"]}]
    }


async def test_add_observations_on_a_missing_entity_fails_and_saves_nothing(client):
    await client.call_tool("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []}]})
    result = await client.call_tool(
        "add_observations",
        {
            "observations": [
                {"entityName": "A", "contents": ["new"]},
                {"entityName": "Nobody", "contents": ["x"]},
            ]
        },
    )
    assert result.is_error
    assert result.content[0].text.startswith("Entity with name Nobody not found")
    graph = await client.call_tool("read_graph", {})
    assert graph.structured_content["entities"] == [{"name": "A", "entityType": "t", "observations": []}]


async def test_a_malformed_argument_names_the_field(client):
    result = await client.call_tool("create_entities", {"entities": [{"name": "A", "observations": []}]})
    assert result.is_error
    assert "entities[0].entityType" in result.content[0].text
    graph = await client.call_tool("read_graph", {})
    assert graph.structured_content == {"entities": [], "relations": []}
