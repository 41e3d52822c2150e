"""Bounded reads through the real MCP client: read_graph pages and modes, and the
response budget that keeps read_graph and open_nodes answers within what a client takes."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server
from graphmem.tools.budget import CHARS_PER_TOKEN


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


pytestmark = pytest.mark.anyio


def _entity(name: str, entity_type: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


PEOPLE = [
    _entity("Alice", "person", "works at Acme"),
    _entity("Acme", "company", "makes anvils", "founded 1901"),
    _entity("Bob", "person"),
    _entity("Berlin", "city", "capital of Germany"),
    _entity("Carol", "person", "lives in Berlin"),
]
LINKS = [
    {"from": "Alice", "to": "Acme", "relationType": "works_at"},
    {"from": "Alice", "to": "Bob", "relationType": "knows"},
    {"from": "Carol", "to": "Berlin", "relationType": "lives_in"},
    {"from": "Bob", "to": "Carol", "relationType": "knows"},
]


async def _fill(client: Client, entities: list[dict[str, Any]], relations: list[dict[str, Any]]) -> None:
    for start in range(0, len(entities), 1000):
        assert not (await client.call_tool("create_entities", {"entities": entities[start : start + 1000]})).is_error
    if relations:
        assert not (await client.call_tool("create_relations", {"relations": relations})).is_error


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    listing = {tool.name: tool for tool in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, listing[tool].output_schema)
    # The first text item is the structured answer as pretty JSON, as the official server writes it.
    assert json.loads(result.content[0].text) == result.structured_content
    return result


@pytest.fixture
async def small_budget_client(settings: Settings) -> AsyncIterator[Client]:
    async with Client(build_server(dataclasses.replace(settings, response_budget=300)), mode="legacy") as connected:
        yield connected


async def test_a_plain_read_graph_answers_exactly_as_the_official_server(client):
    await _fill(client, PEOPLE, LINKS)
    result = await _call(client, "read_graph", {})
    assert result.structured_content == {"entities": PEOPLE, "relations": LINKS}
    assert len(result.content) == 1


async def test_offset_and_limit_page_through_entities_in_creation_order(client):
    await _fill(client, PEOPLE, LINKS)
    first = (await _call(client, "read_graph", {"offset": 0, "limit": 2})).structured_content
    second = (await _call(client, "read_graph", {"offset": 2, "limit": 2})).structured_content
    last = (await _call(client, "read_graph", {"offset": 4, "limit": 2})).structured_content
    assert [e["name"] for e in first["entities"] + second["entities"] + last["entities"]] == [e["name"] for e in PEOPLE]
    assert first["totalEntities"] == second["totalEntities"] == 5
    # A page holds the relations among its own entities only: a consistent slice.
    assert first["relations"] == [LINKS[0]]
    assert second["relations"] == []


async def test_entity_type_filters_the_entities_and_their_relations(client):
    await _fill(client, PEOPLE, LINKS)
    people = (await _call(client, "read_graph", {"entityType": "person"})).structured_content
    assert [e["name"] for e in people["entities"]] == ["Alice", "Bob", "Carol"]
    assert people["relations"] == [LINKS[1], LINKS[3]]
    assert people["totalEntities"] == 3
    nobody = (await _call(client, "read_graph", {"entityType": "Person"})).structured_content
    assert nobody == {"entities": [], "relations": [], "totalEntities": 0}


async def test_names_mode_lists_names_and_types_only(client):
    await _fill(client, PEOPLE, LINKS)
    names = (await _call(client, "read_graph", {"mode": "names"})).structured_content
    assert names == {
        "names": [{"name": e["name"], "entityType": e["entityType"]} for e in PEOPLE],
        "totalEntities": 5,
    }


async def test_summary_mode_counts_observations_and_relations(client):
    await _fill(client, PEOPLE, LINKS)
    summary = (await _call(client, "read_graph", {"mode": "summary", "entityType": "person"})).structured_content
    assert summary["summary"] == [
        {"name": "Alice", "entityType": "person", "observationCount": 1, "relationCount": 2},
        {"name": "Bob", "entityType": "person", "observationCount": 0, "relationCount": 2},
        {"name": "Carol", "entityType": "person", "observationCount": 1, "relationCount": 2},
    ]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"offset": -1}, "offset"), ({"limit": 0}, "limit"), ({"mode": "everything"}, "mode"), ({"limit": "5"}, "limit")],
)
async def test_bad_paging_arguments_are_tool_errors_naming_the_field(client, arguments, field):
    result = await client.call_tool("read_graph", arguments)
    assert result.is_error
    assert field in result.content[0].text


def _many(count: int) -> list[dict[str, Any]]:
    return [_entity(f"entity {i:03}", "thing", f"observation number {i} about something") for i in range(count)]


async def test_a_read_over_the_budget_is_cut_at_an_entity_boundary_and_says_how_to_continue(small_budget_client):
    client = small_budget_client
    entities = _many(60)
    chain = [{"from": f"entity {i:03}", "to": f"entity {i + 1:03}", "relationType": "next"} for i in range(59)]
    await _fill(client, entities, chain)
    result = await _call(client, "read_graph", {})
    answer = result.structured_content
    shown = len(answer["entities"])
    assert 0 < shown < 60
    assert answer["entities"] == entities[:shown]
    assert answer["truncated"] == {"omittedEntities": 60 - shown, "nextOffset": shown}
    # About 300 tokens at about 4 characters each.
    assert len(result.content[0].text) <= 300 * 4
    kept = {e["name"] for e in answer["entities"]}
    assert answer["relations"] and all(r["from"] in kept or r["to"] in kept for r in answer["relations"])
    note = result.content[1].text
    assert f"Showing {shown} of 60 entities" in note and f"offset={shown}" in note

    # Following the advice reaches every entity exactly once.
    seen = [e["name"] for e in answer["entities"]]
    offset = shown
    while offset < 60:
        page = (await _call(client, "read_graph", {"offset": offset, "limit": 1000})).structured_content
        seen += [e["name"] for e in page["entities"]]
        offset = page.get("truncated", {}).get("nextOffset", 60)
    assert seen == [e["name"] for e in entities]


async def test_names_mode_is_cut_to_the_budget_too(small_budget_client):
    await _fill(small_budget_client, _many(200), [])
    result = await _call(small_budget_client, "read_graph", {"mode": "names"})
    answer = result.structured_content
    assert answer["totalEntities"] == 200
    assert answer["truncated"]["nextOffset"] == len(answer["names"]) < 200
    assert 'mode "names"' in result.content[1].text


async def test_open_nodes_is_cut_to_the_budget(small_budget_client):
    entities = _many(30)
    await _fill(small_budget_client, entities, [])
    names = [e["name"] for e in entities]
    answer = (await _call(small_budget_client, "open_nodes", {"names": names})).structured_content
    assert 0 < len(answer["entities"]) < 30
    assert answer["truncated"]["omittedEntities"] == 30 - len(answer["entities"])


async def test_a_single_entity_larger_than_the_budget_is_still_returned_whole(small_budget_client):
    big = _entity("Big", "thing", *[f"a long observation number {i} " * 5 for i in range(20)])
    await _fill(small_budget_client, [big], [])
    answer = (await _call(small_budget_client, "open_nodes", {"names": ["Big"]})).structured_content
    assert answer == {"entities": [big], "relations": []}


async def test_a_budget_of_zero_never_cuts(settings):
    async with Client(build_server(dataclasses.replace(settings, response_budget=0)), mode="legacy") as client:
        await _fill(client, _many(300), [])
        answer = (await _call(client, "read_graph", {})).structured_content
    assert len(answer["entities"]) == 300 and "truncated" not in answer


async def test_a_read_that_fits_hundreds_of_entities_shows_each_with_every_relation_touching_it(settings):
    # More entities fit than a plain read loads at first, so it has to read further.
    entities = _many(600)
    chain = [
        {"from": f"entity {i:03}", "to": f"entity {(i * 7 + 1) % 600:03}", "relationType": "next"} for i in range(600)
    ]
    async with Client(build_server(dataclasses.replace(settings, response_budget=6000)), mode="legacy") as client:
        await _fill(client, entities, chain)
        answer = (await _call(client, "read_graph", {})).structured_content
    shown = len(answer["entities"])
    assert 64 < shown < 600
    assert answer["entities"] == entities[:shown]
    assert answer["truncated"] == {"omittedEntities": 600 - shown, "nextOffset": shown}
    kept = {e["name"] for e in answer["entities"]}
    assert answer["relations"] == [r for r in chain if r["from"] in kept or r["to"] in kept]


# -- a search without a limit is sized for an agent ---------------------------------------------------


def _common_word_memory(count: int) -> list[dict[str, Any]]:
    # Each entity about 120 tokens, all holding the searched word.
    return [_entity(f"Project {i}", "project", f"Shared note {i}: " + "planning detail " * 25) for i in range(count)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("search_budget", "expected_cap"),
    [(None, 10_000), (4_000, 4_000)],
    ids=["default", "configured"],
)
async def test_a_search_without_a_limit_answers_within_the_search_budget_best_first(
    tmp_path, search_budget, expected_cap
):
    settings = Settings(memory_path=tmp_path / "memory.db")
    if search_budget is not None:
        settings = dataclasses.replace(settings, search_budget=search_budget)
    async with Client(build_server(settings), mode="legacy") as client:
        await _fill(client, _common_word_memory(400), [])
        result = await client.call_tool("search_nodes", {"query": "planning"})
        with_limit = await client.call_tool("search_nodes", {"query": "planning", "limit": 1000})
    text = result.content[0].text
    assert len(text) <= expected_cap * CHARS_PER_TOKEN
    shown = result.structured_content["entities"]
    assert 0 < len(shown) < 400
    assert result.structured_content["truncated"]["nextOffset"] == len(shown)
    assert "offset" in result.content[1].text
    # Asked for a limit, the general response budget (25,000 tokens) applies instead.
    assert len(with_limit.structured_content["entities"]) > len(shown)


@pytest.mark.anyio
async def test_a_search_budget_of_zero_answers_every_match(tmp_path):
    settings = dataclasses.replace(Settings(memory_path=tmp_path / "memory.db"), search_budget=0, response_budget=0)
    async with Client(build_server(settings), mode="legacy") as client:
        await _fill(client, _common_word_memory(150), [])
        result = await client.call_tool("search_nodes", {"query": "planning"})
    assert len(result.structured_content["entities"]) == 150
    assert "truncated" not in result.structured_content
