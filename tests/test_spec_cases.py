"""Spec 000, section 8 (behavioural test cases) and section 10 (edge cases), through the tools.

Only the cases that the port of the official suite (test_official_suite.py) does
not already cover are here. Where graphmem reports more than the official server
(skipped names, relations to missing entities) the test checks that too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.server import build_server
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(tool, arguments if arguments is not None else {})
    assert not result.is_error, result.content
    return result


def entity(name: str, entity_type: str = "person", *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(from_: str, to: str, relation_type: str) -> dict[str, str]:
    return {"from": from_, "to": to, "relationType": relation_type}


async def create_entities(client: Client, *entities: dict[str, Any]) -> Any:
    return await call(client, "create_entities", {"entities": list(entities)})


async def create_relations(client: Client, *relations: dict[str, str]) -> Any:
    return await call(client, "create_relations", {"relations": list(relations)})


async def graph_of(client: Client) -> Any:
    return (await call(client, "read_graph")).structured_content


async def names(client: Client, tool: str, arguments: dict[str, Any]) -> list[str]:
    return [e["name"] for e in (await call(client, tool, arguments)).structured_content["entities"]]


# -- 8.1 entity operations ---------------------------------------------------------


async def test_an_entity_named_again_with_another_type_and_observations_is_not_created(client):
    await create_entities(client, entity("Alice", "person", "Is a student"))
    result = await create_entities(client, entity("Alice", "robot", "Is a teacher"))
    assert result.structured_content == {"entities": [], "skipped": ["Alice"]}
    assert (await graph_of(client))["entities"] == [entity("Alice", "person", "Is a student")]


async def test_a_batch_with_an_existing_name_creates_only_the_new_ones_and_reports_the_skipped(client):
    await create_entities(client, entity("Alice"))
    result = await create_entities(client, entity("Alice"), entity("Bob"))
    assert result.structured_content == {"entities": [entity("Bob")], "skipped": ["Alice"]}
    assert [item.text for item in result.content] == [
        json.dumps([entity("Bob")], indent=2),
        "Skipped 1 entity that already exists: Alice. Its observations were not added; "
        "use add_observations for existing entities.",
    ]
    assert [e["name"] for e in (await graph_of(client))["entities"]] == ["Alice", "Bob"]


async def test_a_batch_without_skipped_names_has_no_skipped_key_and_one_text_item(client):
    result = await create_entities(client, entity("Alice"))
    assert result.structured_content == {"entities": [entity("Alice")]}
    assert len(result.content) == 1


async def test_entity_names_are_case_sensitive(client):
    await create_entities(client, entity("alice"))
    result = await create_entities(client, entity("Alice"))
    assert result.structured_content == {"entities": [entity("Alice")]}
    assert [e["name"] for e in (await graph_of(client))["entities"]] == ["alice", "Alice"]


# -- 8.2 relation operations -------------------------------------------------------


async def test_the_same_endpoints_with_another_relation_type_make_a_second_relation(client):
    await create_entities(client, entity("Alice"), entity("Bob"))
    await create_relations(client, relation("Alice", "Bob", "knows"))
    result = await create_relations(client, relation("Alice", "Bob", "likes"))
    assert result.structured_content == {"relations": [relation("Alice", "Bob", "likes")]}
    assert (await graph_of(client))["relations"] == [
        relation("Alice", "Bob", "knows"),
        relation("Alice", "Bob", "likes"),
    ]


async def test_relation_direction_matters(client):
    await create_entities(client, entity("Alice"), entity("Bob"))
    await create_relations(client, relation("Alice", "Bob", "knows"))
    result = await create_relations(client, relation("Bob", "Alice", "knows"))
    assert result.structured_content == {"relations": [relation("Bob", "Alice", "knows")]}
    assert len((await graph_of(client))["relations"]) == 2


# -- 8.4 delete operations ---------------------------------------------------------


async def test_deleting_an_entity_keeps_relations_that_do_not_touch_it(client):
    await create_entities(client, entity("A"), entity("B"), entity("C"))
    await create_relations(client, relation("A", "B", "r"), relation("B", "C", "r"))
    result = await call(client, "delete_entities", {"entityNames": ["A"]})
    assert result.structured_content == {"success": True, "message": "Entities deleted successfully"}
    graph = await graph_of(client)
    assert [e["name"] for e in graph["entities"]] == ["B", "C"]
    assert graph["relations"] == [relation("B", "C", "r")]


# -- 8.5 search operations ---------------------------------------------------------


async def test_search_finds_a_name_whatever_the_case_of_the_query(client):
    await create_entities(client, entity("John_Smith"), entity("Jane"))
    assert await names(client, "search_nodes", {"query": "john"}) == ["John_Smith"]


async def test_search_finds_an_entity_type_whatever_its_case(client):
    await create_entities(client, entity("A", "Person"), entity("B", "place"))
    assert await names(client, "search_nodes", {"query": "person"}) == ["A"]


async def test_search_finds_an_observation_whatever_its_case(client):
    await create_entities(client, entity("A", "person", "Works at Google"), entity("B", "person", "Works at home"))
    assert await names(client, "search_nodes", {"query": "google"}) == ["A"]


async def test_search_returns_the_relations_on_both_sides_of_a_matched_entity(client):
    await create_entities(client, entity("A", "t", "alpha"), entity("B", "t", "bravo"), entity("C", "t", "charlie"))
    await create_relations(client, relation("A", "B", "r"), relation("B", "C", "r"))
    result = await call(client, "search_nodes", {"query": "bravo"})
    assert result.structured_content == {
        "entities": [entity("B", "t", "bravo")],
        "relations": [relation("A", "B", "r"), relation("B", "C", "r")],
    }


async def test_an_empty_query_matches_every_entity(client):
    await create_entities(client, entity("A"), entity("B", "place"))
    assert sorted(await names(client, "search_nodes", {"query": ""})) == ["A", "B"]


# -- 8.6 open nodes ----------------------------------------------------------------


async def test_open_nodes_matches_names_case_sensitively(client):
    await create_entities(client, entity("Alice"))
    result = await call(client, "open_nodes", {"names": ["alice"]})
    assert result.structured_content == {"entities": [], "relations": []}


async def test_open_nodes_returns_every_relation_touching_any_opened_name(client):
    await create_entities(client, entity("A"), entity("B"), entity("C"))
    await create_relations(client, relation("A", "B", "r"), relation("B", "C", "r"), relation("A", "C", "r"))
    result = await call(client, "open_nodes", {"names": ["A", "C"]})
    assert [e["name"] for e in result.structured_content["entities"]] == ["A", "C"]
    assert result.structured_content["relations"] == [
        relation("A", "B", "r"),
        relation("B", "C", "r"),
        relation("A", "C", "r"),
    ]


async def test_open_nodes_answers_in_memory_order_not_request_order(client):
    await create_entities(client, entity("A"), entity("B"))
    assert await names(client, "open_nodes", {"names": ["B", "A"]}) == ["A", "B"]


# -- 8.7 persistence ---------------------------------------------------------------


async def test_the_jsonl_file_holds_valid_json_lines_entities_before_relations(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.jsonl")
    async with Client(build_server(settings), mode="legacy") as client:
        await create_entities(client, entity("Alice"))
        await create_relations(client, relation("Alice", "Bob", "knows"))
        await create_entities(client, entity("Bob"))
    lines = [json.loads(line) for line in settings.memory_path.read_text(encoding="utf-8").split("\n") if line]
    assert [line["type"] for line in lines] == ["entity", "entity", "relation"]
    official = [{key: line[key] for key in line if key not in ("createdAt", "updatedAt", "version")} for line in lines]
    assert official[0] == {"type": "entity", "name": "Alice", "entityType": "person", "observations": []}
    assert official[2] == {"type": "relation", "from": "Alice", "to": "Bob", "relationType": "knows"}
    # Spec 002's metadata rides along; the official server ignores it when it loads the file.
    assert lines[0]["version"] == 1 and lines[2]["createdAt"].endswith("Z")


async def test_a_hand_written_jsonl_file_loads_without_its_type_fields(tmp_path: Path):
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"entity","name":"Alice","entityType":"person","observations":["x"]}\n'
        '{"type":"relation","from":"Alice","to":"Alice","relationType":"self"}',
        encoding="utf-8",
    )
    async with Client(build_server(Settings(memory_path=path)), mode="legacy") as client:
        assert await graph_of(client) == {
            "entities": [entity("Alice", "person", "x")],
            "relations": [relation("Alice", "Alice", "self")],
        }


# -- 8.8 file paths ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["graph.jsonl", "graph.db"])
def test_a_relative_path_lands_under_the_working_directory_and_its_folders_are_created(tmp_path: Path, name: str):
    settings = Settings.from_env({"MEMORY_FILE_PATH": f"data/{name}"}, cwd=tmp_path)
    assert settings.memory_path == tmp_path / "data" / name
    assert not (tmp_path / "data").exists()
    store = open_store(settings)
    try:
        assert (tmp_path / "data").is_dir()
    finally:
        store.close()


# -- 10 edge cases -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_graph", {}),
        ("search_nodes", {"query": "anything"}),
        ("open_nodes", {"names": ["anything"]}),
    ],
)
async def test_every_read_on_a_fresh_memory_is_an_empty_graph(client, tool, arguments):
    result = await call(client, tool, arguments)
    assert result.structured_content == {"entities": [], "relations": []}


async def test_a_relation_to_a_missing_entity_is_saved_and_a_second_text_item_says_so(client):
    await create_entities(client, entity("Alice"))
    result = await create_relations(client, relation("Alice", "Zed", "knows"))
    assert result.structured_content == {"relations": [relation("Alice", "Zed", "knows")]}
    assert len(result.content) == 2
    assert "Zed" in result.content[1].text
    assert (await graph_of(client))["relations"] == [relation("Alice", "Zed", "knows")]


async def test_in_strict_mode_a_relation_to_a_missing_entity_rejects_the_batch(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.db", strict=True)
    async with Client(build_server(settings), mode="legacy") as client:
        await create_entities(client, entity("Alice"), entity("Bob"))
        result = await client.call_tool(
            "create_relations", {"relations": [relation("Alice", "Bob", "knows"), relation("Alice", "Zed", "knows")]}
        )
        assert result.is_error
        assert result.content[0].text.startswith("Entity with name Zed not found")
        assert (await graph_of(client))["relations"] == []


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("delete_entities", {"entityNames": ["A", "Zed", "Yan"]}, "Deleted 1 of 3 entities. Not found: Zed, Yan"),
        ("delete_entities", {"entityNames": ["Nobody"]}, "Deleted 0 of 1 entities. Not found: Nobody"),
        (
            "delete_observations",
            {"deletions": [{"entityName": "A", "observations": ["x", "q"]}]},
            "Deleted 1 of 2 observations.",
        ),
        (
            "delete_observations",
            {
                "deletions": [
                    {"entityName": "A", "observations": ["x"]},
                    {"entityName": "Zed", "observations": ["a", "b"]},
                ]
            },
            "Deleted 1 of 3 observations. Entities not found: Zed",
        ),
        (
            "delete_relations",
            {"relations": [relation("A", "B", "no")]},
            "Deleted 0 of 1 relations. The rest matched nothing.",
        ),
        (
            "delete_relations",
            {"relations": [relation("A", "B", "r"), relation("B", "A", "r")]},
            "Deleted 1 of 2 relations. The rest matched nothing.",
        ),
        ("delete_entities", {"entityNames": ["A"]}, "Entities deleted successfully"),
        (
            "delete_observations",
            {"deletions": [{"entityName": "A", "observations": ["x"]}]},
            "Observations deleted successfully",
        ),
        ("delete_relations", {"relations": [relation("A", "B", "r")]}, "Relations deleted successfully"),
    ],
)
async def test_delete_messages_say_what_matched_and_are_the_official_ones_when_all_did(
    client, tool, arguments, message
):
    await create_entities(client, entity("A", "t", "x", "y"), entity("B"))
    await create_relations(client, relation("A", "B", "r"))
    result = await call(client, tool, arguments)
    assert result.structured_content == {"success": True, "message": message}
    assert [item.text for item in result.content] == [message]
