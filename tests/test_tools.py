"""The nine official tools through the real MCP client, in process (search_nodes with its additions)."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import anyio
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


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


# -- search_nodes: ranked, filtered, paged, bounded -------------------------------------


async def _remember(client, entities: list[tuple[str, str, list[str]]]) -> None:
    await client.call_tool(
        "create_entities",
        {"entities": [{"name": n, "entityType": t, "observations": o} for n, t, o in entities]},
    )


_MEMORY = [
    ("Bob", "person", ["Worked at Acme until 2021", "Moved to Berlin after leaving Acme"]),
    ("Acme", "company", ["Payments company in Austin"]),
    ("Berlin", "city", ["Capital of Germany"]),
    ("Carol", "person", ["Lives in Lisbon"]),
    ("Dan", "person", ["Plays chess"]),
    ("Eve", "person", ["Grows tomatoes"]),
]


async def test_search_nodes_answers_a_question_best_first(client):
    await _remember(client, _MEMORY)
    await client.call_tool("create_relations", {"relations": [{"from": "Bob", "to": "Acme", "relationType": "left"}]})
    result = await client.call_tool("search_nodes", {"query": "Which city did Bob move to after he left Acme?"})
    assert not result.is_error
    names = [entity["name"] for entity in result.structured_content["entities"]]
    assert names[0] == "Bob"
    assert result.structured_content["relations"] == [{"from": "Bob", "to": "Acme", "relationType": "left"}]
    assert len(result.content) == 1
    assert json.loads(result.content[0].text) == result.structured_content


async def test_search_nodes_keeps_one_entity_type(client):
    await _remember(client, _MEMORY)
    result = await client.call_tool("search_nodes", {"query": "acme berlin", "entityType": "city"})
    assert [entity["name"] for entity in result.structured_content["entities"]] == ["Berlin"]


async def test_search_nodes_pages_with_limit_and_offset(client):
    await _remember(client, [(f"fan {i}", "person", [f"likes tea, cup number {i}"]) for i in range(12)])
    everything = await client.call_tool("search_nodes", {"query": "tea", "limit": 100})
    order = [entity["name"] for entity in everything.structured_content["entities"]]
    assert len(order) == 12
    pages = []
    for offset in range(0, 12, 5):
        page = await client.call_tool("search_nodes", {"query": "tea", "limit": 5, "offset": offset})
        pages += [entity["name"] for entity in page.structured_content["entities"]]
    assert pages == order


async def test_search_nodes_takes_a_list_of_queries_matching_any(client):
    await _remember(client, _MEMORY)
    result = await client.call_tool("search_nodes", {"query": ["lisbon", "tomatoes"]})
    assert sorted(entity["name"] for entity in result.structured_content["entities"]) == ["Carol", "Eve"]


async def test_search_nodes_cut_to_the_response_budget_says_how_to_get_the_rest(tmp_path):
    settings = Settings(memory_path=tmp_path / "memory.db", response_budget=120)
    async with Client(build_server(settings), mode="legacy") as client:
        await _remember(client, [(f"fan {i}", "person", [f"likes green tea {i}"]) for i in range(20)])
        first = await client.call_tool("search_nodes", {"query": "green tea", "limit": 15})
        assert not first.is_error
        shown = [entity["name"] for entity in first.structured_content["entities"]]
        assert 0 < len(shown) < 15
        assert first.structured_content["truncated"] == {"omittedEntities": 15 - len(shown), "nextOffset": len(shown)}
        # The official text item is the graph as shown; the second one explains the cut.
        assert json.loads(first.content[0].text) == {
            key: value for key, value in first.structured_content.items() if key != "truncated"
        }
        note = first.content[1].text
        assert f"Showing {len(shown)} of 15 entities" in note
        assert f"offset {len(shown)} (and limit 15)" in note
        # Following nextOffset walks the whole ranked answer, nothing twice, nothing lost.
        collected, page = list(shown), first
        while "truncated" in page.structured_content:
            offset = page.structured_content["truncated"]["nextOffset"]
            page = await client.call_tool("search_nodes", {"query": "green tea", "limit": 15, "offset": offset})
            collected += [entity["name"] for entity in page.structured_content["entities"]]
    async with Client(build_server(replace(settings, response_budget=0)), mode="legacy") as client:
        whole = await client.call_tool("search_nodes", {"query": "green tea", "limit": 100})
    assert collected == [entity["name"] for entity in whole.structured_content["entities"]]


async def test_search_nodes_without_a_budget_is_never_cut(tmp_path):
    settings = Settings(memory_path=tmp_path / "memory.db", response_budget=0)
    async with Client(build_server(settings), mode="legacy") as client:
        await _remember(client, [(f"fan {i}", "person", ["likes tea " * 50]) for i in range(30)])
        result = await client.call_tool("search_nodes", {"query": "tea"})
        assert len(result.structured_content["entities"]) == 30
        assert "truncated" not in result.structured_content
        assert len(result.content) == 1


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"query": "acme", "limit": 0}, "limit"),
        ({"query": "acme", "limit": 1001}, "limit"),
        ({"query": "acme", "offset": -1}, "offset"),
        ({"query": []}, "query"),
        ({"query": ["acme", "x" * 2049]}, "query[1]"),
    ],
)
async def test_search_nodes_refuses_an_option_out_of_range_naming_it(client, arguments, field):
    await _remember(client, _MEMORY)
    before = await client.call_tool("read_graph", {})
    result = await client.call_tool("search_nodes", arguments)
    assert result.is_error
    assert result.structured_content is None
    assert result.content[0].text.startswith(f"Invalid argument {field}: ")
    assert (await client.call_tool("read_graph", {})).structured_content == before.structured_content


async def test_concurrent_calls_each_reach_the_store_whole(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        created = await client.call_tool(
            "create_entities", {"entities": [{"name": "Alice", "entityType": "person", "observations": []}]}
        )
        assert not created.is_error, created.content

        async def add(i: int) -> None:
            result = await client.call_tool(
                "add_observations", {"observations": [{"entityName": "Alice", "contents": [f"fact {i}"]}]}
            )
            assert not result.is_error, result.content

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                for i in range(20):
                    tasks.start_soon(add, i)
        opened = await client.call_tool("open_nodes", {"names": ["Alice"]})
    observations = opened.structured_content["entities"][0]["observations"]
    assert sorted(observations) == sorted(f"fact {i}" for i in range(20))


async def test_the_thread_that_runs_the_calls_ends_with_the_server(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        await client.call_tool("read_graph", {})
        assert "graphmem-store" in [thread.name for thread in threading.enumerate()]
    assert "graphmem-store" not in [thread.name for thread in threading.enumerate()]


# -- any text, NUL included, through the tools on either backend ---------------------------


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
async def test_a_name_with_nul_is_found_skipped_when_created_again_and_deleted_like_any_name(tmp_path, suffix):
    name, fact = "nul\x00name", "a\x00b"
    async with Client(build_server(Settings(memory_path=tmp_path / f"memory{suffix}")), mode="legacy") as client:
        with anyio.fail_after(5):
            entity = {"name": name, "entityType": "t", "observations": [fact, "kept"]}
            assert not (await client.call_tool("create_entities", {"entities": [entity]})).is_error
            again = await client.call_tool("create_entities", {"entities": [entity]})
            assert not again.is_error and again.structured_content["entities"] == []
            opened = await client.call_tool("open_nodes", {"names": [name]})
            assert opened.structured_content["entities"] == [entity]
            found = await client.call_tool("search_nodes", {"query": "l\x00na"})
            assert [e["name"] for e in found.structured_content["entities"]] == [name]
            deletion = {"deletions": [{"entityName": name, "observations": [fact]}]}
            assert not (await client.call_tool("delete_observations", deletion)).is_error
            opened = await client.call_tool("open_nodes", {"names": [name]})
            assert opened.structured_content["entities"][0]["observations"] == ["kept"]
            assert not (await client.call_tool("delete_entities", {"entityNames": [name]})).is_error
            graph = await client.call_tool("read_graph", {})
            assert graph.structured_content == {"entities": [], "relations": []}


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
async def test_a_lone_surrogate_is_refused_alike_by_every_backend(tmp_path, suffix):
    async with Client(build_server(Settings(memory_path=tmp_path / f"memory{suffix}")), mode="legacy") as client:
        with anyio.fail_after(5):
            entity = {"name": "a\ud800", "entityType": "t", "observations": []}
            result = await client.call_tool("create_entities", {"entities": [entity]})
            assert result.is_error
            assert "entities[0].name: contains an unpaired surrogate" in result.content[0].text
            graph = await client.call_tool("read_graph", {})
            assert graph.structured_content == {"entities": [], "relations": []}


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("open_nodes", {"names": ["a\ud800"]}, "names[0]"),
        ("search_nodes", {"query": "a\ud800"}, "query"),
        ("query_nodes", {"entityType": "\ud800"}, "entityType"),
    ],
)
async def test_reads_kept_for_reuse_refuse_a_lone_surrogate_as_an_input_error(tmp_path, suffix, tool, arguments, field):
    settings = Settings(memory_path=tmp_path / f"memory{suffix}", toolset="all")
    async with Client(build_server(settings), mode="legacy") as client:
        with anyio.fail_after(5):
            result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert "unexpectedly" not in text
    assert field in text and "unpaired surrogate" in text, text
