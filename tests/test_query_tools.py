"""query_nodes through the real MCP client on both backends: every filter, sorts, paging, budget, errors."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.models import Entity, Relation
from graphmem.server import build_server
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS
from graphmem.tools.toolsets import select_tools

pytestmark = pytest.mark.anyio


def _meta(created: str, updated: str, importance: float, thread: str) -> dict[str, Any]:
    return {"createdAt": created, "updatedAt": updated, "version": 1, "importance": importance, "threadId": thread}


# In creation order. Bob's times are written without milliseconds and with an offset, as
# another tool may write them; Old comes from an official file and has no metadata at all.
ENTITIES = [
    Entity("Ada", "person", ("Writes code",), _meta("2026-01-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z", 0.9, "t1")),
    Entity("Bob", "person", (), _meta("2026-01-15T12:00:00Z", "2026-02-01T02:00:00+02:00", 0.4, "t2")),
    Entity("Acme", "company", (), _meta("2026-02-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z", 0.9, "t1")),
    Entity("Old", "note", ("From the official server",)),
    Entity("Zed", "project", (), _meta("2026-03-01T00:00:00.000Z", "2026-03-02T00:00:00.000Z", 1, "t2")),
]
RELATIONS = [
    Relation("Ada", "Acme", "works_at"),
    Relation("Bob", "Acme", "works_at"),
    Relation("Ada", "Bob", "knows"),
]


@pytest.fixture
def memory(any_backend_settings: Settings) -> Settings:
    """A new memory on each backend: query_nodes answers alike on all three."""
    return any_backend_settings


def _settings(memory: Settings, budget: int = 25_000) -> Settings:
    return dataclasses.replace(memory, toolset="all", response_budget=budget)


def _seed(memory: Settings, entities: list[Entity], relations: list[Relation]) -> None:
    store = open_store(memory)
    try:
        with store.write():
            store.insert_entities(entities)
            store.insert_relations(relations)
    finally:
        store.close()


@pytest.fixture
async def client(memory: Settings) -> AsyncIterator[Client]:
    _seed(memory, ENTITIES, RELATIONS)
    async with Client(build_server(_settings(memory)), mode="legacy") as connected:
        yield connected


async def _query(client: Client, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(5):
        result = await client.call_tool("query_nodes", arguments)
        assert not result.is_error, result.content[0].text
        listing = {tool.name: tool for tool in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, listing["query_nodes"].output_schema)
    return result.structured_content


async def _names(client: Client, arguments: dict[str, Any]) -> list[str]:
    return [entity["name"] for entity in (await _query(client, arguments))["entities"]]


async def _error(client: Client, arguments: dict[str, Any]) -> str:
    with anyio.fail_after(5):
        result = await client.call_tool("query_nodes", arguments)
    assert result.is_error
    return result.content[0].text


async def test_without_filters_every_entity_comes_in_creation_order_with_the_total(client):
    answer = await _query(client, {})
    assert [entity["name"] for entity in answer["entities"]] == ["Ada", "Bob", "Acme", "Old", "Zed"]
    assert answer["total"] == 5
    assert "truncated" not in answer


async def test_entities_show_their_importance_thread_and_times(client):
    ada = (await _query(client, {"entityType": "person"}))["entities"][0]
    assert ada == {
        "name": "Ada",
        "entityType": "person",
        "observations": ["Writes code"],
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-03-01T00:00:00.000Z",
        # version 1 is left out: it says nothing an agent reads.
        "importance": 0.9,
        "threadId": "t1",
    }
    old = (await _query(client, {"entityType": "note"}))["entities"][0]
    assert old == {"name": "Old", "entityType": "note", "observations": ["From the official server"]}


async def test_entity_type_takes_one_exact_type_or_a_list(client):
    assert await _names(client, {"entityType": "person"}) == ["Ada", "Bob"]
    assert await _names(client, {"entityType": "Person"}) == []
    assert await _names(client, {"entityType": ["company", "project"]}) == ["Acme", "Zed"]


async def test_min_importance_keeps_entities_at_or_above_it_and_never_those_without_one(client):
    assert await _names(client, {"minImportance": 0.9}) == ["Ada", "Acme", "Zed"]
    assert await _names(client, {"minImportance": 1}) == ["Zed"]
    assert await _names(client, {"minImportance": 0}) == ["Ada", "Bob", "Acme", "Zed"]


async def test_created_since_is_inclusive_and_until_exclusive_compared_as_instants(client):
    # Bob was written as 12:00:00Z (no milliseconds): the same instant as 12:00:00.000Z.
    assert await _names(client, {"createdSince": "2026-01-15T12:00:00.000Z"}) == ["Bob", "Acme", "Zed"]
    assert await _names(client, {"createdSince": "2026-01-15T12:00:00.001Z"}) == ["Acme", "Zed"]
    assert await _names(client, {"createdUntil": "2026-02-01"}) == ["Ada", "Bob"]
    assert await _names(client, {"createdSince": "2026-01-02", "createdUntil": "2026-03-01T00:00:00Z"}) == [
        "Bob",
        "Acme",
    ]


async def test_updated_times_with_an_offset_compare_by_the_moment_they_name(client):
    # Bob's updatedAt is 02:00 at +02:00, which is midnight UTC, as Acme's.
    assert await _names(client, {"updatedSince": "2026-02-01T00:00:00Z", "updatedUntil": "2026-02-01T00:00:01Z"}) == [
        "Bob",
        "Acme",
    ]
    assert await _names(client, {"updatedSince": "2026-02-01T01:00:00+01:00", "updatedUntil": "2026-03-01"}) == [
        "Bob",
        "Acme",
    ]
    assert await _names(client, {"updatedSince": "2026-03-01"}) == ["Ada", "Zed"]


async def test_thread_id_keeps_the_entities_of_one_thread(client):
    assert await _names(client, {"threadId": "t2"}) == ["Bob", "Zed"]
    assert await _names(client, {"threadId": "nope"}) == []


async def test_has_relation_filters_by_type_and_direction(client):
    assert await _names(client, {"hasRelation": {"relationType": "works_at", "direction": "out"}}) == ["Ada", "Bob"]
    assert await _names(client, {"hasRelation": {"relationType": "works_at", "direction": "in"}}) == ["Acme"]
    assert await _names(client, {"hasRelation": {"relationType": "knows"}}) == ["Ada", "Bob"]
    assert await _names(client, {"hasRelation": {"direction": "in"}}) == ["Bob", "Acme"]
    assert await _names(client, {"hasRelation": {}}) == ["Ada", "Bob", "Acme"]
    assert await _names(client, {"hasRelation": {"relationType": "owns"}}) == []


async def test_every_filter_given_must_hold(client):
    arguments = {
        "entityType": ["person", "company"],
        "minImportance": 0.5,
        "threadId": "t1",
        "hasRelation": {"relationType": "works_at", "direction": "out"},
        "createdUntil": "2026-02-01",
    }
    assert await _names(client, arguments) == ["Ada"]
    assert (await _query(client, {"entityType": "person", "minImportance": 0.5}))["total"] == 1


async def test_sorts_put_entities_without_the_key_last_and_break_ties_by_creation(client):
    assert await _names(client, {"sort": "name"}) == ["Acme", "Ada", "Bob", "Old", "Zed"]
    assert await _names(client, {"sort": "name", "order": "desc"}) == ["Zed", "Old", "Bob", "Ada", "Acme"]
    # Highest first by default; Ada and Acme tie at 0.9: reversed, the later created comes first.
    assert await _names(client, {"sort": "importance"}) == ["Zed", "Acme", "Ada", "Bob", "Old"]
    assert await _names(client, {"sort": "importance", "order": "asc"}) == ["Bob", "Ada", "Acme", "Zed", "Old"]
    assert await _names(client, {"sort": "createdAt"}) == ["Zed", "Acme", "Bob", "Ada", "Old"]
    assert await _names(client, {"sort": "updatedAt", "order": "asc"}) == ["Bob", "Acme", "Ada", "Zed", "Old"]
    assert await _names(client, {"order": "desc"}) == ["Zed", "Old", "Acme", "Bob", "Ada"]


async def test_limit_and_offset_page_through_one_order(client):
    first = await _query(client, {"sort": "importance", "limit": 2})
    assert [entity["name"] for entity in first["entities"]] == ["Zed", "Acme"]
    assert first["total"] == 5
    assert await _names(client, {"sort": "importance", "limit": 2, "offset": 2}) == ["Ada", "Bob"]
    assert await _names(client, {"sort": "importance", "limit": 2, "offset": 4}) == ["Old"]
    assert await _names(client, {"sort": "importance", "offset": 5}) == []


async def test_an_answer_over_the_response_budget_is_cut_and_says_where_to_go_on(memory: Settings):
    many = [Entity(f"Item {index:03d}", "item", (f"Fact number {index} " * 8,)) for index in range(200)]
    _seed(memory, many, [])
    async with Client(build_server(_settings(memory, budget=1_000)), mode="legacy") as client:
        first = await _query(client, {"entityType": "item"})
        shown = len(first["entities"])
        assert 0 < shown < 200
        assert first["total"] == 200
        assert first["truncated"] == {"omittedEntities": 200 - shown, "nextOffset": shown}
        with anyio.fail_after(5):
            result = await client.call_tool("query_nodes", {"entityType": "item"})
        assert f"offset {shown}" in result.content[1].text
        following = await _query(client, {"entityType": "item", "offset": shown, "limit": 3})
        assert [entity["name"] for entity in following["entities"]] == [f"Item {shown + i:03d}" for i in range(3)]
        assert "truncated" not in following


@pytest.mark.parametrize(
    ("arguments", "field", "advice"),
    [
        ({"createdSince": "yesterday"}, "createdSince", "ISO 8601"),
        ({"updatedUntil": "2026-13-01"}, "updatedUntil", "ISO 8601"),
        ({"createdSince": "2026-02-01", "createdUntil": "2026-01-01"}, "createdUntil", "after the start"),
        ({"limit": 0}, "limit", "from 1 to 1,000"),
        ({"limit": 1001}, "limit", "from 1 to 1,000"),
        ({"offset": -1}, "offset", "from 0 to 100,000"),
        ({"offset": 100_001}, "offset", "from 0 to 100,000"),
        ({"minImportance": 1.5}, "minImportance", "from 0 to 1"),
        ({"entityType": []}, "entityType", "give a type"),
        ({"hasRelation": {"relationType": "x" * 1001}}, "hasRelation.relationType", "shorten it"),
    ],
)
async def test_bad_input_gets_one_error_naming_the_field_and_what_to_send(client, arguments, field, advice):
    message = await _error(client, arguments)
    assert f"Invalid argument {field}" in message
    assert advice in message


async def test_an_unknown_sort_or_direction_is_refused_naming_the_choices(client):
    assert "sort" in (message := await _error(client, {"sort": "size"})) and "importance" in message
    assert "direction" in (message := await _error(client, {"hasRelation": {"direction": "up"}})) and "out" in message


def test_query_nodes_is_listed_in_the_all_toolset_only_while_the_default_is_full():
    assert "query_nodes" in [spec.name for spec in select_tools(ALL_TOOLS, "all")]
    default = [spec.name for spec in select_tools(ALL_TOOLS, "default")]
    assert "query_nodes" not in default and len(default) == 20
