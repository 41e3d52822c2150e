"""The official server's own 50 tests (src/memory/__tests__), ported to graphmem.

knowledge-graph.test.ts (36) runs through the MCP tools on the in-process client,
file-path.test.ts (9) against graphmem's path rules (`Settings.from_env`,
`open_store`), and resource.test.ts (5) through the resource and subscription
requests. Each test is named after the official `it(...)` it ports; where
graphmem's rules differ on purpose (where memory lives by default, relative paths)
the docstring says how the test was adapted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from graphmem.config import Settings, default_memory_path
from graphmem.server import build_server
from graphmem.storage import open_store

pytestmark = pytest.mark.anyio

GRAPH_URI = "memory://knowledge-graph"


@asynccontextmanager
async def connect(settings: Settings) -> AsyncIterator[Client]:
    """A fresh server on the settings' memory and a client connected to it (a new "manager")."""
    async with Client(build_server(settings), mode="legacy") as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call a tool that must succeed; the structured result."""
    result = await client.call_tool(tool, arguments if arguments is not None else {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def entity(name: str, entity_type: str = "person", *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(from_: str, to: str, relation_type: str) -> dict[str, str]:
    return {"from": from_, "to": to, "relationType": relation_type}


async def create_entities(client: Client, *entities: dict[str, Any]) -> Any:
    return await call(client, "create_entities", {"entities": list(entities)})


async def create_relations(client: Client, *relations: dict[str, str]) -> Any:
    return await call(client, "create_relations", {"relations": list(relations)})


async def read_graph(client: Client) -> Any:
    return await call(client, "read_graph")


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The official suite holds on every backend: SQLite, the official JSONL file and PostgreSQL."""
    return any_backend_settings


@pytest.fixture
def any_settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


@pytest.fixture
def jsonl_settings(tmp_path: Path) -> Settings:
    return Settings(memory_path=tmp_path / "memory.jsonl")


# == knowledge-graph.test.ts ====================================================
# -- createEntities --


async def test_create_entities_should_create_new_entities(client):
    entities = [entity("Alice", "person", "works at Acme Corp"), entity("Bob", "person", "likes programming")]
    result = await create_entities(client, *entities)
    assert result["entities"] == entities
    assert len((await read_graph(client))["entities"]) == 2


async def test_create_entities_should_not_create_duplicate_entities(client):
    alice = entity("Alice", "person", "works at Acme Corp")
    await create_entities(client, alice)
    again = await create_entities(client, alice)
    assert again["entities"] == []
    assert len((await read_graph(client))["entities"]) == 1


async def test_create_entities_should_handle_empty_entity_arrays(client):
    result = await client.call_tool("create_entities", {"entities": []})
    assert not result.is_error
    assert result.structured_content == {"entities": []}
    assert [item.text for item in result.content] == ["[]"]


# -- createRelations --


async def test_create_relations_should_create_new_relations(client):
    await create_entities(client, entity("Alice"), entity("Bob"))
    relations = [relation("Alice", "Bob", "knows")]
    assert (await create_relations(client, *relations))["relations"] == relations
    assert len((await read_graph(client))["relations"]) == 1


async def test_create_relations_should_not_create_duplicate_relations(client):
    await create_entities(client, entity("Alice"), entity("Bob"))
    await create_relations(client, relation("Alice", "Bob", "knows"))
    assert (await create_relations(client, relation("Alice", "Bob", "knows")))["relations"] == []
    assert len((await read_graph(client))["relations"]) == 1


async def test_create_relations_should_handle_empty_relation_arrays(client):
    assert (await create_relations(client))["relations"] == []


# -- addObservations --


async def test_add_observations_should_add_observations_to_existing_entities(client):
    await create_entities(client, entity("Alice", "person", "works at Acme Corp"))
    result = await call(
        client,
        "add_observations",
        {"observations": [{"entityName": "Alice", "contents": ["likes coffee", "has a dog"]}]},
    )
    assert result["results"] == [{"entityName": "Alice", "addedObservations": ["likes coffee", "has a dog"]}]
    alice = (await read_graph(client))["entities"][0]
    assert len(alice["observations"]) == 3


async def test_add_observations_should_not_add_duplicate_observations(client):
    await create_entities(client, entity("Alice", "person", "works at Acme Corp"))
    await call(client, "add_observations", {"observations": [{"entityName": "Alice", "contents": ["likes coffee"]}]})
    result = await call(
        client,
        "add_observations",
        {"observations": [{"entityName": "Alice", "contents": ["likes coffee", "has a dog"]}]},
    )
    assert result["results"][0]["addedObservations"] == ["has a dog"]
    assert len((await read_graph(client))["entities"][0]["observations"]) == 3


async def test_add_observations_should_throw_error_for_non_existent_entity(client):
    result = await client.call_tool(
        "add_observations", {"observations": [{"entityName": "NonExistent", "contents": ["some observation"]}]}
    )
    assert result.is_error
    assert result.structured_content is None
    assert result.content[0].text.startswith("Entity with name NonExistent not found")


# -- deleteEntities --


async def test_delete_entities_should_delete_entities(client):
    await create_entities(client, entity("Alice"), entity("Bob"))
    await call(client, "delete_entities", {"entityNames": ["Alice"]})
    assert [e["name"] for e in (await read_graph(client))["entities"]] == ["Bob"]


async def test_delete_entities_should_cascade_delete_relations_when_deleting_entities(client):
    await create_entities(client, entity("Alice"), entity("Bob"), entity("Charlie"))
    await create_relations(client, relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows"))
    await call(client, "delete_entities", {"entityNames": ["Bob"]})
    graph = await read_graph(client)
    assert len(graph["entities"]) == 2
    assert graph["relations"] == []


async def test_delete_entities_should_handle_deleting_non_existent_entities(client):
    result = await client.call_tool("delete_entities", {"entityNames": ["NonExistent"]})
    assert not result.is_error
    assert result.structured_content["success"] is True
    assert (await read_graph(client))["entities"] == []


# -- deleteObservations --


async def test_delete_observations_should_delete_observations_from_entities(client):
    await create_entities(client, entity("Alice", "person", "works at Acme Corp", "likes coffee"))
    await call(
        client, "delete_observations", {"deletions": [{"entityName": "Alice", "observations": ["likes coffee"]}]}
    )
    assert (await read_graph(client))["entities"][0]["observations"] == ["works at Acme Corp"]


async def test_delete_observations_should_handle_deleting_from_non_existent_entities(client):
    result = await client.call_tool(
        "delete_observations", {"deletions": [{"entityName": "NonExistent", "observations": ["some observation"]}]}
    )
    assert not result.is_error
    assert result.structured_content["success"] is True
    assert (await read_graph(client))["entities"] == []


# -- deleteRelations --


async def test_delete_relations_should_delete_specific_relations(client):
    await create_entities(client, entity("Alice"), entity("Bob"))
    await create_relations(client, relation("Alice", "Bob", "knows"), relation("Alice", "Bob", "works_with"))
    await call(client, "delete_relations", {"relations": [relation("Alice", "Bob", "knows")]})
    assert (await read_graph(client))["relations"] == [relation("Alice", "Bob", "works_with")]


# -- readGraph --


async def test_read_graph_should_return_empty_graph_when_file_does_not_exist(any_settings):
    assert any_settings.database_url is not None or not any_settings.memory_path.exists()
    async with connect(any_settings) as client:
        assert await read_graph(client) == {"entities": [], "relations": []}


async def test_read_graph_should_return_complete_graph_with_entities_and_relations(client):
    await create_entities(client, entity("Alice", "person", "works at Acme Corp"))
    await create_relations(client, relation("Alice", "Alice", "self"))
    assert await read_graph(client) == {
        "entities": [entity("Alice", "person", "works at Acme Corp")],
        "relations": [relation("Alice", "Alice", "self")],
    }


# -- searchNodes --


@pytest.fixture
async def search_client(client):
    await create_entities(
        client,
        entity("Alice", "person", "works at Acme Corp", "likes programming"),
        entity("Bob", "person", "works at TechCo"),
        entity("Acme Corp", "company", "tech company"),
    )
    await create_relations(
        client, relation("Alice", "Acme Corp", "works_at"), relation("Bob", "Acme Corp", "competitor")
    )
    return client


async def search(client: Client, query: str) -> Any:
    return await call(client, "search_nodes", {"query": query})


async def test_search_nodes_should_search_by_entity_name(search_client):
    result = await search(search_client, "Alice")
    assert [e["name"] for e in result["entities"]] == ["Alice"]


async def test_search_nodes_should_search_by_entity_type(search_client):
    result = await search(search_client, "company")
    assert [e["name"] for e in result["entities"]] == ["Acme Corp"]


async def test_search_nodes_should_search_by_observation_content(search_client):
    result = await search(search_client, "programming")
    assert [e["name"] for e in result["entities"]] == ["Alice"]


async def test_search_nodes_should_be_case_insensitive(search_client):
    result = await search(search_client, "ALICE")
    assert [e["name"] for e in result["entities"]] == ["Alice"]


async def test_search_nodes_should_include_relations_where_at_least_one_endpoint_matches(search_client):
    result = await search(search_client, "Acme")
    assert {e["name"] for e in result["entities"]} == {"Alice", "Acme Corp"}
    assert result["relations"] == [
        relation("Alice", "Acme Corp", "works_at"),
        relation("Bob", "Acme Corp", "competitor"),
    ]


async def test_search_nodes_should_include_outgoing_relations_to_unmatched_entities(search_client):
    result = await search(search_client, "Alice")
    assert len(result["entities"]) == 1
    assert result["relations"] == [relation("Alice", "Acme Corp", "works_at")]


async def test_search_nodes_should_return_empty_graph_for_no_matches(search_client):
    assert await search(search_client, "NonExistent") == {"entities": [], "relations": []}


# -- openNodes --


@pytest.fixture
async def open_client(client):
    await create_entities(client, entity("Alice"), entity("Bob"), entity("Charlie"))
    await create_relations(client, relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows"))
    return client


async def open_nodes(client: Client, *names: str) -> Any:
    return await call(client, "open_nodes", {"names": list(names)})


async def test_open_nodes_should_open_specific_nodes_by_name(open_client):
    result = await open_nodes(open_client, "Alice", "Bob")
    assert [e["name"] for e in result["entities"]] == ["Alice", "Bob"]


async def test_open_nodes_should_include_all_relations_connected_to_opened_nodes(open_client):
    result = await open_nodes(open_client, "Alice", "Bob")
    assert result["relations"] == [relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows")]


async def test_open_nodes_should_include_relations_connected_to_opened_nodes(open_client):
    result = await open_nodes(open_client, "Bob")
    assert result["relations"] == [relation("Alice", "Bob", "knows"), relation("Bob", "Charlie", "knows")]


async def test_open_nodes_should_include_outgoing_relations_to_nodes_not_in_the_open_set(open_client):
    result = await open_nodes(open_client, "Alice")
    assert [e["name"] for e in result["entities"]] == ["Alice"]
    assert result["relations"] == [relation("Alice", "Bob", "knows")]


async def test_open_nodes_should_include_incoming_relations_from_nodes_not_in_the_open_set(open_client):
    result = await open_nodes(open_client, "Charlie")
    assert [e["name"] for e in result["entities"]] == ["Charlie"]
    assert result["relations"] == [relation("Bob", "Charlie", "knows")]


async def test_open_nodes_should_handle_opening_non_existent_nodes(open_client):
    assert (await open_nodes(open_client, "NonExistent"))["entities"] == []


async def test_open_nodes_should_handle_empty_node_list(open_client):
    assert await open_nodes(open_client) == {"entities": [], "relations": []}


# -- file persistence --


async def test_file_persistence_should_persist_data_across_manager_instances(any_settings):
    async with connect(any_settings) as first:
        await create_entities(first, entity("Alice", "person", "persistent data"))
    async with connect(any_settings) as second:
        assert (await read_graph(second))["entities"] == [entity("Alice", "person", "persistent data")]


async def test_file_persistence_should_handle_jsonl_format_correctly(jsonl_settings):
    async with connect(jsonl_settings) as client:
        await create_entities(client, entity("Alice"))
        await create_relations(client, relation("Alice", "Alice", "self"))
    lines = [line for line in jsonl_settings.memory_path.read_text(encoding="utf-8").split("\n") if line.strip()]
    assert len(lines) == 2
    assert json.loads(lines[0])["type"] == "entity"
    assert json.loads(lines[1])["type"] == "relation"


async def test_file_persistence_should_strip_type_field_from_entities_when_loading_from_file(jsonl_settings):
    async with connect(jsonl_settings) as client:
        await create_entities(client, entity("Alice", "person", "test observation"), entity("Bob"))
        await create_relations(client, relation("Alice", "Bob", "knows"))
    items = [json.loads(line) for line in jsonl_settings.memory_path.read_text(encoding="utf-8").split("\n") if line]
    assert {item["type"] for item in items} == {"entity", "relation"}
    async with connect(jsonl_settings) as client:
        graph = await read_graph(client)
    assert len(graph["entities"]) == 2
    assert all(set(e) == {"name", "entityType", "observations"} for e in graph["entities"])
    assert len(graph["relations"]) == 1
    assert all(set(r) == {"from", "to", "relationType"} for r in graph["relations"])


async def test_file_persistence_should_strip_type_field_from_search_nodes_results(jsonl_settings):
    async with connect(jsonl_settings) as client:
        await create_entities(client, entity("Alice", "person", "works at Acme"))
        await create_relations(client, relation("Alice", "Alice", "self"))
    async with connect(jsonl_settings) as client:
        result = await search(client, "Alice")
    assert result["entities"] == [entity("Alice", "person", "works at Acme")]
    assert result["relations"] == [relation("Alice", "Alice", "self")]


async def test_file_persistence_should_strip_type_field_from_open_nodes_results(jsonl_settings):
    async with connect(jsonl_settings) as client:
        await create_entities(client, entity("Alice"), entity("Bob"))
        await create_relations(client, relation("Alice", "Bob", "knows"))
    async with connect(jsonl_settings) as client:
        result = await open_nodes(client, "Alice", "Bob")
    assert all(set(e) == {"name", "entityType", "observations"} for e in result["entities"])
    assert len(result["entities"]) == 2
    assert result["relations"] == [relation("Alice", "Bob", "knows")]


# == file-path.test.ts ==========================================================
# The official server resolves paths in `ensureMemoryFilePath()`; graphmem in
# `Settings.from_env` (a relative path against the working directory, the default
# in the user's data directory) and migrates a legacy `memory.json` when the store
# opens a `memory.jsonl` next to it.


def test_ensure_memory_file_path_should_return_absolute_path_when_memory_file_path_is_absolute(tmp_path: Path):
    absolute = tmp_path / "custom-memory.jsonl"
    settings = Settings.from_env({"MEMORY_FILE_PATH": str(absolute)}, cwd=tmp_path / "elsewhere")
    assert settings.memory_path == absolute


def test_ensure_memory_file_path_should_convert_relative_path_to_absolute_when_memory_file_path_is_relative(
    tmp_path: Path,
):
    """Adapted: graphmem joins a relative path to the working directory, not to its package."""
    settings = Settings.from_env({"MEMORY_FILE_PATH": "custom-memory.jsonl"}, cwd=tmp_path)
    assert settings.memory_path.is_absolute()
    assert settings.memory_path == tmp_path / "custom-memory.jsonl"


def test_ensure_memory_file_path_should_handle_windows_absolute_paths(tmp_path: Path):
    windows_path = "C:\\temp\\memory.jsonl"
    settings = Settings.from_env({"MEMORY_FILE_PATH": windows_path}, cwd=tmp_path)
    if sys.platform == "win32":
        assert str(settings.memory_path) == windows_path
    else:
        # Not absolute on POSIX: a file name with backslashes, in the working directory.
        assert settings.memory_path.is_absolute()
        assert settings.memory_path == tmp_path / windows_path


def test_ensure_memory_file_path_should_return_default_path_when_no_files_exist(tmp_path: Path):
    assert Settings.from_env({}, cwd=tmp_path).memory_path == default_memory_path()


def _legacy_pair(folder: Path) -> tuple[Path, Path]:
    return folder / "memory.json", folder / "memory.jsonl"


def test_ensure_memory_file_path_should_migrate_from_memory_json_to_memory_jsonl_when_only_old_file_exists(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    """Adapted: graphmem migrates when it opens a `memory.jsonl` that is missing beside a `memory.json`."""
    old, new = _legacy_pair(tmp_path)
    old.write_text('{"test":"data"}', encoding="utf-8")
    open_store(Settings(memory_path=new)).close()
    assert new.exists()
    assert not old.exists()
    stderr = capfd.readouterr().err
    assert "DETECTED: Found legacy memory.json file" in stderr
    assert "COMPLETED: Successfully migrated" in stderr


def test_ensure_memory_file_path_should_use_new_file_when_both_old_and_new_files_exist(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    old, new = _legacy_pair(tmp_path)
    old.write_text('{"old":"data"}', encoding="utf-8")
    new.write_text('{"new":"data"}', encoding="utf-8")
    open_store(Settings(memory_path=new)).close()
    assert old.read_text(encoding="utf-8") == '{"old":"data"}'
    assert new.read_text(encoding="utf-8") == '{"new":"data"}'
    assert capfd.readouterr().err == ""


def test_ensure_memory_file_path_should_preserve_file_content_during_migration(tmp_path: Path):
    old, new = _legacy_pair(tmp_path)
    content = '{"entities": [{"name": "test", "type": "person"}]}'
    old.write_text(content, encoding="utf-8")
    open_store(Settings(memory_path=new)).close()
    assert new.read_text(encoding="utf-8") == content


def test_default_memory_path_should_end_with_memory_jsonl():
    """Adapted: graphmem's default memory is a SQLite file, `memory.db`, in its own folder."""
    path = default_memory_path()
    assert path.name == "memory.db"
    assert path.parent.name == "graphmem"


def test_default_memory_path_should_be_an_absolute_path():
    path = default_memory_path()
    assert path.is_absolute()
    # Never inside the installed package, where an upgrade would delete it (official issue #220).
    assert "site-packages" not in path.parts
    assert "node_modules" not in path.parts


# == resource.test.ts ===========================================================


async def test_knowledge_graph_resource_registers_with_kebab_case_name_correct_uri_and_json_mime_type(client):
    listed = await client.list_resources()
    assert [resource.model_dump(by_alias=True, exclude_none=True) for resource in listed.resources] == [
        {
            "uri": GRAPH_URI,
            "name": "knowledge-graph",
            "title": "Knowledge Graph",
            "description": "The full knowledge graph with all entities and relations",
            "mimeType": "application/json",
        }
    ]


async def test_knowledge_graph_resource_handler_returns_the_graph_as_json_in_the_contents_array(client):
    await create_entities(client, entity("Alice", "person", "engineer"))
    await create_relations(client, relation("Alice", "Acme", "works_at"))
    result = await client.read_resource(GRAPH_URI)
    assert len(result.contents) == 1
    (content,) = result.contents
    assert isinstance(content, types.TextResourceContents)
    assert str(content.uri) == GRAPH_URI
    assert content.mime_type == "application/json"
    assert json.loads(content.text) == {
        "entities": [entity("Alice", "person", "engineer")],
        "relations": [relation("Alice", "Acme", "works_at")],
    }
    # Pretty-printed as JSON.stringify(graph, null, 2) writes it.
    assert content.text == json.dumps(json.loads(content.text), indent=2, ensure_ascii=False)


async def test_resource_subscriptions_declares_the_resources_subscribe_capability(client):
    resources = client.server_capabilities.resources
    assert resources is not None
    assert resources.subscribe is True


async def test_resource_subscriptions_registers_subscribe_and_unsubscribe_request_handlers(settings):
    updates: list[str] = []
    updated = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            updated.set()

    async with Client(build_server(settings), mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(GRAPH_URI)
        await create_entities(client, entity("Alice"))
        with anyio.fail_after(5):
            await updated.wait()
        assert updates == [GRAPH_URI]

        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource(GRAPH_URI)
        await create_entities(client, entity("Bob"))
        # A request after the write: any notification from the write would have come before its answer.
        await read_graph(client)
        assert updates == [GRAPH_URI]


async def test_resource_subscriptions_subscribe_and_unsubscribe_handlers_acknowledge_with_an_empty_result(client):
    with pytest.warns(MCPDeprecationWarning):
        subscribed = await client.subscribe_resource(GRAPH_URI)
    with pytest.warns(MCPDeprecationWarning):
        unsubscribed = await client.unsubscribe_resource(GRAPH_URI)
    assert subscribed.model_dump(exclude_none=True) == {}
    assert unsubscribed.model_dump(exclude_none=True) == {}


# == beyond the official tests ==================================================
# What the running official server answers that its own tests do not check.


async def test_resource_templates_list_answers_rather_than_an_unknown_method(client):
    # The official server has no templates (and no templates/list); graphmem lists one, the
    # entity resource, which adds to the official graph resource without changing it.
    result = await client.list_resource_templates()
    assert [template.uri_template for template in result.resource_templates] == ["memory://entity/{name}"]


async def test_every_write_notifies_subscribers_even_when_nothing_changed(settings):
    updates: list[str] = []
    all_arrived = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            if len(updates) == 6:
                all_arrived.set()

    async with Client(build_server(settings), mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(GRAPH_URI)
        writes = [
            ("create_entities", {"entities": []}),
            ("create_relations", {"relations": []}),
            ("add_observations", {"observations": []}),
            ("delete_entities", {"entityNames": ["Nobody"]}),
            ("delete_observations", {"deletions": []}),
            ("delete_relations", {"relations": []}),
        ]
        for tool, arguments in writes:
            await call(client, tool, arguments)
        # Reads and failed writes tell nobody.
        await call(client, "read_graph")
        assert (
            await client.call_tool("add_observations", {"observations": [{"entityName": "X", "contents": []}]})
        ).is_error
        with anyio.fail_after(5):
            await all_arrived.wait()
        await call(client, "search_nodes", {"query": "x"})
        assert updates == [GRAPH_URI] * len(writes)
