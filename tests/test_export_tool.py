"""export_graph through the real MCP client: every format, the budget, bad arguments."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import networkx
import pydot
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


pytestmark = [
    pytest.mark.anyio,
    # pydot's grammar still calls pyparsing's old camelCase names.
    pytest.mark.filterwarnings("ignore:.* deprecated - use:DeprecationWarning"),
]

ENTITIES = [
    {"name": 'Ada "Countess" Lovelace', "entityType": "person", "observations": ["wrote the first program"]},
    {"name": "Analytical\nEngine", "entityType": "machine", "observations": []},
]
RELATIONS = [{"from": 'Ada "Countess" Lovelace', "to": "Analytical\nEngine", "relationType": "programmed"}]


async def _connect(settings: Settings, budget: int = 25_000) -> Client:
    return Client(build_server(dataclasses.replace(settings, toolset="all", response_budget=budget)), mode="legacy")


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with await _connect(settings) as connected:
        await connected.call_tool("create_entities", {"entities": ENTITIES})
        await connected.call_tool("create_relations", {"relations": RELATIONS})
        yield connected


async def _export(client: Client, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool("export_graph", arguments)
    assert not result.is_error, result.content[0].text
    listing = {tool.name: tool for tool in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, listing["export_graph"].output_schema)
    assert result.content[0].text == result.structured_content["content"]
    return result


async def test_json_is_the_graph_document(client):
    structured = (await _export(client, {})).structured_content
    assert structured["format"] == "json"
    assert json.loads(structured["content"]) == {"entities": ENTITIES, "relations": RELATIONS}
    assert (structured["entities"], structured["relations"]) == (2, 1)


async def test_dot_is_read_by_a_dot_parser(client):
    text = (await _export(client, {"format": "dot"})).structured_content["content"]
    (graph,) = pydot.graph_from_dot_data(text)
    assert len(graph.get_nodes()) == 2 and len(graph.get_edges()) == 1
    assert graph.get_nodes()[0].get("label") == '"Ada \\"Countess\\" Lovelace"'


async def test_graphml_is_read_by_networkx(client):
    text = (await _export(client, {"format": "graphml"})).structured_content["content"]
    graph = networkx.read_graphml(io.BytesIO(text.encode("utf-8")))
    assert sorted(data["name"] for _, data in graph.nodes(data=True)) == sorted(e["name"] for e in ENTITIES)


async def test_mermaid_starts_a_flowchart_with_encoded_labels(client):
    text = (await _export(client, {"format": "mermaid"})).structured_content["content"]
    assert text.splitlines()[0] == "graph LR"
    assert 'n0["Ada #34;Countess#34; Lovelace"]' in text
    assert 'n0 -->|"programmed"| n1' in text


async def test_a_large_memory_is_cut_to_the_budget_with_a_note(settings):
    async with await _connect(settings, budget=200) as small:
        many = [{"name": f"thing {i}", "entityType": "t", "observations": ["x" * 40]} for i in range(50)]
        await small.call_tool("create_entities", {"entities": many})
        result = await _export(small, {"format": "dot"})
    structured = result.structured_content
    assert 0 < structured["entities"] < 50
    assert structured["truncated"]["omittedEntities"] == 50 - structured["entities"]
    assert "graphmem export --format dot" in result.content[1].text


async def test_an_unknown_format_is_a_tool_error_naming_the_field(client):
    result = await client.call_tool("export_graph", {"format": "svg"})
    assert result.is_error
    assert "format" in result.content[0].text
