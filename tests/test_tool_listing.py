"""The tool contract: our tools/list against the official server's, and the error shape.

`fixtures/official_tools_list.json` is the raw `tools/list` answer of the official
server (2026.8.31). Ours must match it except for what graphmem adds on purpose:
`maxLength` on `search_nodes.query` (which accepts a list of strings too, unlisted), optional
arguments and result keys (`entityType`, `limit`, `offset`, `mode` of `search_nodes`, the
`skipped` list of `create_entities`, paging and modes of `read_graph`, `truncated` on
answers cut to the response budget, `partlyEmbedded` on a search ranked while part of the
memory waited for its vectors), and a guidance sentence after each official description.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from graphmem.config import Settings
from graphmem.server import build_server, initialization_options

pytestmark = pytest.mark.anyio

OFFICIAL: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "official_tools_list.json").read_text(encoding="utf-8")
)["result"]["tools"]
OFFICIAL_BY_NAME = {tool["name"]: tool for tool in OFFICIAL}


async def listed(client) -> dict[str, dict[str, Any]]:
    result = await client.list_tools()
    return {tool.name: tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in result.tools}


async def test_the_official_nine_come_first_in_the_official_order(client):
    result = await client.list_tools()
    assert [tool.name for tool in result.tools][:9] == [tool["name"] for tool in OFFICIAL]


async def test_every_tool_has_exactly_the_official_keys(client):
    ours = await listed(client)
    for name, official in OFFICIAL_BY_NAME.items():
        assert set(ours[name]) == set(official), name


@pytest.mark.parametrize("name", list(OFFICIAL_BY_NAME))
async def test_titles_annotations_and_execution_are_the_official_ones(client, name):
    ours = (await listed(client))[name]
    official = OFFICIAL_BY_NAME[name]
    assert ours["title"] == official["title"]
    assert ours["annotations"] == official["annotations"]
    assert ours["execution"] == official["execution"]


@pytest.mark.parametrize("name", list(OFFICIAL_BY_NAME))
async def test_each_description_starts_with_the_official_one_and_adds_guidance(client, name):
    ours = (await listed(client))[name]["description"]
    official = OFFICIAL_BY_NAME[name]["description"]
    assert ours.startswith(official + ". ")
    assert len(ours) > len(official) + 2


# What graphmem adds on purpose, property by property: optional inputs and outputs.
# `project` (which project to read) and `projects` / `relationProjects` (where each item lives,
# when a read across every project shows more than one) on the reads; `asOf` (the memory as it
# stood at a time) on the three reads.
INPUT_ADDITIONS = {
    "read_graph": {"entityType", "offset", "limit", "mode", "project", "asOf", "validAt"},
    "search_nodes": {"entityType", "limit", "offset", "mode", "project", "asOf", "validAt"},
    "open_nodes": {"project", "asOf", "validAt"},
}
OUTPUT_ADDITIONS = {
    "create_entities": {"skipped"},
    "read_graph": {"names", "summary", "totalEntities", "truncated", "projects", "relationProjects"},
    "search_nodes": {"truncated", "partlyEmbedded", "projects", "relationProjects"},
    "open_nodes": {"truncated", "projects", "relationProjects"},
}


@pytest.mark.parametrize("name", list(OFFICIAL_BY_NAME))
async def test_input_schemas_are_the_official_ones_apart_from_optional_additions(client, name):
    ours = copy.deepcopy((await listed(client))[name]["inputSchema"])
    if name == "search_nodes":
        official_query = OFFICIAL_BY_NAME[name]["inputSchema"]["properties"]["query"]
        assert list(ours["properties"]) == [
            *("query", "entityType", "limit", "offset", "mode"),
            *("project", "asOf", "validAt"),
        ]
        # Still first and the official string, with a length limit.
        assert ours["properties"]["query"] == {**official_query, "maxLength": 2048}
        assert ours["properties"]["entityType"]["type"] == "string"
        assert ours["properties"]["limit"] | {"description": ""} == {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000,
            "description": "",
        }
        assert ours["properties"]["offset"] | {"description": ""} == {
            "type": "integer",
            "minimum": 0,
            "maximum": 1_000_000_000,
            "default": 0,
            "description": "",
        }
        assert ours["properties"]["mode"] == {"enum": ["hybrid", "lexical", "semantic"], "default": "hybrid"}
        ours["properties"]["query"] = official_query
    for added in INPUT_ADDITIONS.get(name, ()):
        ours["properties"].pop(added)
        assert added not in ours.get("required", [])
    if name == "add_observations":
        # An optional list beside each item's contents: which observations they correct.
        item = ours["properties"]["observations"]["items"]
        assert item["properties"].pop("supersedes")["type"] == "array"
        assert "supersedes" not in item["required"]
        # What the one content sets: the entity keeps one current fact of an attribute.
        assert item["properties"].pop("attribute")["type"] == "string"
        assert "attribute" not in item["required"]
        # When the contents hold in the world.
        for bound in ("validFrom", "validUntil"):
            assert item["properties"].pop(bound)["type"] == "string"
            assert bound not in item["required"]
    assert ours == OFFICIAL_BY_NAME[name]["inputSchema"]


@pytest.mark.parametrize("name", list(OFFICIAL_BY_NAME))
async def test_output_schemas_are_the_official_ones_apart_from_optional_additions(client, name):
    ours = copy.deepcopy((await listed(client))[name]["outputSchema"])
    if name == "create_entities":
        assert ours["properties"]["skipped"] == {"type": "array", "items": {"type": "string"}}
    for added in OUTPUT_ADDITIONS.get(name, ()):
        ours["properties"].pop(added)
        assert added not in ours["required"]
    if name == "read_graph":
        # Its modes answer with different keys, so none can be required.
        assert ours["required"] == []
        ours["required"] = ["entities", "relations"]
    assert ours == OFFICIAL_BY_NAME[name]["outputSchema"]


# -- the error shape -------------------------------------------------------------------


async def test_an_unknown_tool_is_a_tool_error_that_names_the_tool(client):
    result = await client.call_tool("no_such_tool", {})
    assert result.is_error
    assert result.structured_content is None
    # The official text first, as the official server (SDK 1.x) answers it.
    assert result.content[0].text.startswith("MCP error -32602: Tool no_such_tool not found")


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search_nodes", {"query": 5}, "query"),
        ("search_nodes", {"query": ["ok", 5]}, "query"),
        ("search_nodes", {"query": "x", "limit": "10"}, "limit"),
        ("search_nodes", {"query": "x", "offset": 1.5}, "offset"),
        ("search_nodes", {"query": "x", "entityType": 3}, "entityType"),
        ("create_entities", {"entities": "Alice"}, "entities"),
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": "x"}]}, "observations"),
        ("create_relations", {"relations": [{"from": "A", "to": 7, "relationType": "r"}]}, "relations[0].to"),
        ("add_observations", {"observations": [{"entityName": "A"}]}, "observations[0].contents"),
        ("delete_entities", {"entityNames": [None]}, "entityNames[0]"),
        ("open_nodes", {"names": "Alice"}, "names"),
    ],
)
async def test_an_argument_of_the_wrong_type_is_a_tool_error_naming_the_field(client, tool, arguments, field):
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert result.structured_content is None
    text = result.content[0].text
    assert text.startswith(f"Input validation error: Invalid arguments for tool {tool}: ")
    assert field in text
    assert (await client.call_tool("read_graph", {})).structured_content == {"entities": [], "relations": []}


async def test_missing_arguments_are_a_tool_error_naming_the_missing_field(client):
    result = await client.call_tool("create_entities")
    assert result.is_error
    assert "entities" in result.content[0].text


async def test_read_graph_needs_no_arguments(client):
    result = await client.call_tool("read_graph")
    assert not result.is_error
    assert result.structured_content == {"entities": [], "relations": []}


async def _raw_call(settings: Settings, params: dict[str, Any]) -> dict[str, Any]:
    """Send one `tools/call` with exactly these params (the SDK client drops null values)."""
    server = build_server(settings)
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        client_read, client_write = client_streams
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, *server_streams, initialization_options(server))

            async def send(message: types.JSONRPCMessage) -> None:
                await client_write.send(SessionMessage(message))

            async def answer() -> dict[str, Any]:
                received = await client_read.receive()
                assert isinstance(received, SessionMessage)
                dumped: dict[str, Any] = received.message.model_dump(by_alias=True, exclude_none=True)
                return dumped

            with anyio.fail_after(5):
                await send(
                    types.JSONRPCRequest(
                        jsonrpc="2.0",
                        id=1,
                        method="initialize",
                        params={
                            "protocolVersion": "2025-06-18",
                            "capabilities": {},
                            "clientInfo": {"name": "test", "version": "0"},
                        },
                    )
                )
                await answer()
                await send(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
                await send(types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/call", params=params))
                response = await answer()
            await client_write.aclose()
    return response


async def test_null_arguments_are_a_tool_error_naming_the_missing_field(settings):
    response = await _raw_call(settings, {"name": "create_entities", "arguments": None})
    assert response["id"] == 2
    assert response["result"]["isError"] is True
    assert "entities" in response["result"]["content"][0]["text"]


async def test_null_arguments_are_accepted_by_read_graph(settings):
    response = await _raw_call(settings, {"name": "read_graph", "arguments": None})
    assert response["result"]["structuredContent"] == {"entities": [], "relations": []}


def _multi_typed(schema: Any, where: str) -> list[str]:
    """Where a schema gives a property more than one type, or a choice of schemas (anyOf, oneOf, allOf)."""
    found = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            found.append(f"{where}: type {schema['type']}")
        found += [f"{where}: {key}" for key in ("anyOf", "oneOf", "allOf") if key in schema]
        for key, value in schema.items():
            found += _multi_typed(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _multi_typed(value, f"{where}[{index}]")
    return found


async def test_every_schema_gives_each_property_one_type_for_clients_of_a_single_type_dialect(settings):
    # Gemini's function declarations and OpenAPI 3.0 take one type per property; the Inspector's
    # --strict warns on more.
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        tools = await listed(client)
    problems = [
        problem
        for name, tool in tools.items()
        for part in ("inputSchema", "outputSchema")
        for problem in _multi_typed(tool.get(part, {}), f"{name}.{part}")
    ]
    assert problems == []


async def test_a_new_fact_in_supersedes_is_an_empty_string_or_a_null_and_a_type_may_be_a_plain_string(settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        entity = {"name": "P", "entityType": "Code", "observations": ["Uses lxml 5"]}
        await client.call_tool("create_entities", {"entities": [entity]})
        added = await client.call_tool(
            "add_observations",
            {
                "observations": [
                    {"entityName": "P", "contents": ["Uses lxml 6", "Runs nightly"], "supersedes": ["obs_1", ""]}
                ]
            },
        )
        assert added.is_error is False, added.content
        also = await client.call_tool(
            "add_observations", {"observations": [{"entityName": "P", "contents": ["Has tests"], "supersedes": [None]}]}
        )
        assert also.is_error is False, also.content
        opened = (await client.call_tool("open_nodes", {"names": ["P"]})).structured_content
        assert opened["entities"][0]["observations"] == ["Uses lxml 6", "Runs nightly", "Has tests"]
        for entity_type in ("Code", ["Code", "Person"]):
            found = (await client.call_tool("query_nodes", {"entityType": entity_type})).structured_content
            assert [entity["name"] for entity in found["entities"]] == ["P"]
