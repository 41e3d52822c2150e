"""get_context_info: the named entities, their neighbours, the relations among them,
and observations ordered for reading, through the domain and the real MCP client."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.models import Entity, Relation
from graphmem.domain.context import context_info
from graphmem.server import build_server


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


def _story(graph):
    graph.create_entities(
        [
            Entity("Bob", "person", ("likes chess", "[S:Archived] lived in Rome", "[S:Active] works at Initech")),
            Entity("Acme", "company", ("makes anvils",)),
            Entity("Berlin", "city", ("[2024-03-01] Bob moved here", "capital of Germany")),
            Entity("Initech", "company"),
            Entity("Eve", "person", ("[2022-01-01] met Bob",)),
            Entity("Far", "place"),
        ]
    )
    graph.create_relations(
        [
            Relation("Bob", "Acme", "worked_at"),
            Relation("Bob", "Berlin", "lives_in"),
            Relation("Initech", "Berlin", "based_in"),
            Relation("Bob", "Initech", "works_at"),
            Relation("Eve", "Bob", "knows"),
            Relation("Berlin", "Far", "near"),
        ]
    )


def test_the_named_entity_comes_first_then_its_neighbours_with_the_relations_among_them(graph):
    _story(graph)
    info = context_info(graph, ["Bob"])
    assert [entity.name for entity in info.graph.entities] == ["Bob", "Acme", "Berlin", "Initech", "Eve"]
    # Initech-Berlin links two neighbours and is included; Berlin-Far leaves the set and is not.
    assert Relation("Initech", "Berlin", "based_in") in info.graph.relations
    assert Relation("Berlin", "Far", "near") not in info.graph.relations
    assert len(info.graph.relations) == 5
    assert info.not_found == ()


def test_observations_are_ordered_for_reading_and_archived_ones_left_out(graph):
    _story(graph)
    bob = context_info(graph, ["Bob"]).graph.entities[0]
    assert bob.observations == ("[S:Active] works at Initech", "likes chess")


def test_names_that_are_not_entities_are_reported(graph):
    _story(graph)
    info = context_info(graph, ["Nobody", "Far", "Far"])
    assert info.not_found == ("Nobody",)
    assert [entity.name for entity in info.graph.entities] == ["Far", "Berlin"]


@pytest.mark.anyio
async def test_the_tool_answers_with_structured_context_and_a_note_for_missing_names(settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await client.call_tool(
            "create_entities",
            {"entities": [{"name": "Bob", "entityType": "person", "observations": ["[S:Active] in Oslo"]}]},
        )
        result = await client.call_tool("get_context_info", {"entityNames": ["Bob", "Ghost"]})
        listing = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert not result.is_error
    jsonschema.validate(result.structured_content, listing["get_context_info"].output_schema)
    (bob,) = result.structured_content["entities"]
    # The official keys, then spec 002's metadata (updatedAt and version once it has changed).
    assert list(bob) == ["name", "entityType", "observations", "createdAt"]
    assert (bob["name"], bob["observations"]) == ("Bob", ["[S:Active] in Oslo"])
    assert (result.structured_content["relations"], result.structured_content["notFound"]) == ([], ["Ghost"])
    assert json.loads(result.content[0].text) == result.structured_content
    assert "Not found: Ghost" in result.content[1].text


@pytest.mark.anyio
@pytest.mark.parametrize("arguments", [{}, {"entityNames": []}, {"entityNames": "Bob"}])
async def test_bad_arguments_are_tool_errors_naming_the_field(client, arguments):
    result = await client.call_tool("get_context_info", arguments)
    assert result.is_error
    assert "entityNames" in result.content[0].text


@pytest.mark.anyio
async def test_aliases_kept_from_a_fork_file_are_shown(tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text('{"type":"entity","name":"Character-艾拉","entityType":"Character","aliases":["艾拉"]}\n')
    settings = Settings(memory_path=path, toolset="all")
    async with Client(build_server(settings), mode="legacy") as client:
        result = await client.call_tool("get_context_info", {"entityNames": ["Character-艾拉"]})
    assert result.structured_content["entities"] == [
        {"name": "Character-艾拉", "entityType": "Character", "observations": [], "aliases": ["艾拉"]}
    ]
