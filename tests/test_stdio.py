"""End to end over stdio: the MCP SDK's own client drives `python -m graphmem` in a subprocess.

These are the tests closest to what Claude Desktop or Cursor do: spawn the server,
handshake, call every official tool, read and subscribe to the graph resource. Raw-pipe
tests check what the SDK client would hide: the order of lines, and that stdout carries
nothing but JSON-RPC.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from graphmem.server import GRAPH_URI
from tests.helpers_clients import sdk_client_env
from tests.helpers_stdio import (
    INITIALIZE,
    INITIALIZED,
    START_SECONDS,
    create_entities,
    entity,
    is_tool_success,
    raw_server,
    server_env,
    server_log,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OFFICIAL_TOOLS = [
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
]
OFFICIAL_CAPABILITIES = {"tools": {"listChanged": True}, "resources": {"listChanged": True, "subscribe": True}}
# The official server's, unchanged, and the prompts and logging graphmem adds.
CAPABILITIES = {**OFFICIAL_CAPABILITIES, "prompts": {"listChanged": False}, "logging": {}}


@asynccontextmanager
async def stdio_client(
    memory: Path, on_notification: Callable[[Any], Awaitable[None]] | None = None
) -> AsyncIterator[Client]:
    """The SDK client on a `python -m graphmem` subprocess; fails if a stdout line was not JSON-RPC."""
    faults: list[Exception] = []

    async def on_message(message: Any) -> None:
        # The SDK hands a line it cannot parse to the message handler as an exception.
        if isinstance(message, Exception):
            faults.append(message)
        elif on_notification is not None:
            await on_notification(message)

    server = StdioServerParameters(command=sys.executable, args=["-m", "graphmem"], env=sdk_client_env(memory))
    with anyio.fail_after(START_SECONDS):
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            yield client
    assert faults == []


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result
    # The text is the same JSON as the structured content (or its one list), pretty-printed.
    assert result.content[0].type == "text"
    return result.structured_content


def relation(from_: str, to: str, relation_type: str) -> dict[str, str]:
    return {"from": from_, "to": to, "relationType": relation_type}


# -- through the SDK client ------------------------------------------------------------------


async def test_the_sdk_client_connects_over_stdio_with_the_official_capabilities_plus_prompts_and_logging(tmp_path):
    async with stdio_client(tmp_path / "memory.db") as client:
        capabilities = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
        assert capabilities == CAPABILITIES
        assert client.server_info is not None
        assert client.server_info.name == "graphmem"
        with pytest.warns(MCPDeprecationWarning):
            assert isinstance(await client.send_ping(), types.EmptyResult)
        listed = [tool.name for tool in (await client.list_tools()).tools]
        assert listed[: len(OFFICIAL_TOOLS)] == OFFICIAL_TOOLS


async def test_the_sdk_client_runs_all_nine_official_tools_over_stdio(tmp_path):
    alice, bob, acme = (
        entity("Alice", "engineer", entity_type="person"),
        entity("Bob"),
        entity("Acme", entity_type="org"),
    )
    works, knows = relation("Alice", "Acme", "works_at"), relation("Bob", "Alice", "knows")
    async with stdio_client(tmp_path / "memory.db") as client:
        assert await call(client, "create_entities", {"entities": [alice, bob, acme]}) == {
            "entities": [alice, bob, acme]
        }
        assert await call(client, "create_relations", {"relations": [works, knows]}) == {"relations": [works, knows]}
        added = await call(client, "add_observations", {"observations": [{"entityName": "Alice", "contents": ["tea"]}]})
        assert added == {"results": [{"entityName": "Alice", "addedObservations": ["tea"]}]}
        alice["observations"].append("tea")

        assert await call(client, "search_nodes", {"query": "TEA"}) == {
            "entities": [alice],
            "relations": [works, knows],
        }
        assert await call(client, "open_nodes", {"names": ["Bob"]}) == {"entities": [bob], "relations": [knows]}
        everything = {"entities": [alice, bob, acme], "relations": [works, knows]}
        assert await call(client, "read_graph", {}) == everything

        deletions = [{"entityName": "Alice", "observations": ["tea"]}]
        assert (await call(client, "delete_observations", {"deletions": deletions}))["success"] is True
        assert (await call(client, "delete_relations", {"relations": [knows]}))["success"] is True
        assert (await call(client, "delete_entities", {"entityNames": ["Acme"]}))["success"] is True
        alice["observations"].remove("tea")
        # Deleting Acme took its works_at relation with it.
        assert await call(client, "read_graph", {}) == {"entities": [alice, bob], "relations": []}

    # And it is all on disk: a second process sees it.
    async with stdio_client(tmp_path / "memory.db") as client:
        assert await call(client, "read_graph", {}) == {"entities": [alice, bob], "relations": []}


async def test_the_graph_resource_over_stdio_lists_reads_and_notifies_only_while_subscribed(tmp_path):
    updates: list[str] = []
    updated = anyio.Event()

    async def on_notification(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            updated.set()

    async with stdio_client(tmp_path / "memory.db", on_notification) as client:
        (resource,) = (await client.list_resources()).resources
        assert (str(resource.uri), resource.name, resource.mime_type) == (
            GRAPH_URI,
            "knowledge-graph",
            "application/json",
        )

        await call(client, "create_entities", {"entities": [entity("Alice")]})
        assert updates == []  # not subscribed yet
        (content,) = (await client.read_resource(GRAPH_URI)).contents
        assert isinstance(content, types.TextResourceContents)
        assert json.loads(content.text) == {"entities": [entity("Alice")], "relations": []}

        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(GRAPH_URI)
        await call(client, "add_observations", {"observations": [{"entityName": "Alice", "contents": ["new"]}]})
        with anyio.fail_after(5):
            await updated.wait()
        assert updates == [GRAPH_URI]

        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource(GRAPH_URI)
        await call(client, "create_entities", {"entities": [entity("Bob")]})
        # A notice for that write would have come before its answer; one more answer settles it.
        await call(client, "read_graph", {})
        assert updates == [GRAPH_URI]


# -- over raw pipes ------------------------------------------------------------------------------


async def test_the_initialize_answer_announces_the_official_capabilities_plus_prompts_and_logging(tmp_path):
    with anyio.fail_after(START_SECONDS):
        async with raw_server(tmp_path / "memory.db") as server:
            answer = await server.initialize()
    assert answer["result"]["capabilities"] == CAPABILITIES
    assert answer["result"]["protocolVersion"] == INITIALIZE["params"]["protocolVersion"]


async def test_a_write_sends_resources_updated_before_its_answer_while_subscribed(tmp_path):
    with anyio.fail_after(START_SECONDS):
        async with raw_server(tmp_path / "memory.db") as server:
            await server.initialize()
            assert (await server.request("resources/subscribe", {"uri": GRAPH_URI}))["result"] == {}
            request_id = await server.send_request(*create_entities(entity("Alice")))
            first, second = await server.receive(), await server.receive()
            assert first == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": GRAPH_URI},
            }
            assert second["id"] == request_id
            assert is_tool_success(second)

            assert (await server.request("resources/unsubscribe", {"uri": GRAPH_URI}))["result"] == {}
            request_id = await server.send_request(*create_entities(entity("Bob")))
            assert (await server.receive())["id"] == request_id


async def test_stdout_carries_only_jsonrpc_lines_while_the_server_logs_at_debug_level(tmp_path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(START_SECONDS):
        async with raw_server(memory, "serve", "--log-level", "debug") as server:
            await server.initialize()
            await server.request("tools/list")
            await server.request("resources/read", {"uri": GRAPH_URI})
            await server.call(create_entities(entity("Zoë", "日本\u2028語")))
            await server.call(("tools/call", {"name": "add_observations", "arguments": {"observations": []}}))
            await server.call(("tools/call", {"name": "no_such_tool", "arguments": {}}))
            await server.send_line(b"not json")
            await server.close_stdin()
            await server.read_to_end()
            assert server.process.returncode == 0, server_log(memory)
    for line in server.lines:
        message = json.loads(line)  # split on b"\n" only: U+2028 inside a string is no line end
        assert message["jsonrpc"] == "2.0"
    assert len(server.lines) == 7
    assert "DEBUG" in server_log(memory)


def test_requests_read_from_a_file_on_stdin_are_all_answered(tmp_path):
    requests = tmp_path / "requests.jsonl"
    lines = [INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    lines.append({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": create_entities(entity("A"))[1]})
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "graphmem"],
            stdin=stdin,
            capture_output=True,
            env=server_env(tmp_path / "memory.db"),
            timeout=START_SECONDS,
        )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.split(b"\n") if line]
    assert sorted(answer["id"] for answer in answers) == [0, 1, 2]
    assert all("result" in answer for answer in answers)


def test_a_server_started_with_nothing_on_stdin_ends_cleanly(tmp_path):
    # /dev/null is what a service manager or a misconfigured client hands over.
    done = subprocess.run(
        [sys.executable, "-m", "graphmem"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=server_env(tmp_path / "memory.db"),
        timeout=START_SECONDS,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""


def test_a_client_that_stops_reading_stdout_ends_the_server_quietly(tmp_path):
    memory, log = tmp_path / "memory.db", tmp_path / "stderr.log"
    # Plain pipes: anyio's process streams cannot close the read end of stdout.
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "graphmem"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=server_env(memory),
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == INITIALIZE["id"]
        process.stdout.close()
        process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        process.stdin.flush()
        # The answer meets a closed pipe; the server stops instead of serving nobody.
        assert process.wait(timeout=START_SECONDS) == 0
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
    assert "Traceback" not in log.read_text(encoding="utf-8")
