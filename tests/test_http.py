"""`graphmem serve --http` as a process on loopback: the SDK's client, and raw requests for the refusals."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import warnings
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from graphmem.server import GRAPH_URI
from tests.helpers_network import TOKEN, NetworkServer, network_server
from tests.helpers_stdio import INITIALIZE, INITIALIZED, entity
from tests.test_durability import stored_graph

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@asynccontextmanager
async def sdk_session(server: NetworkServer, token: str | None = None):
    headers = {"authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def token_env() -> dict[str, str]:
    return {"GRAPHMEM_TOKEN": TOKEN}


def sse_json(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message in a response, whether it came as JSON or as one SSE event."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(next(d for d in data if d))


@pytest.mark.parametrize("mode", ["--sse-response", "--json-response"])
async def test_the_sdk_client_initializes_pings_lists_and_calls_tools_over_http(tmp_path: Path, mode: str):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(60):
        async with network_server(memory, "--http", mode) as server, sdk_session(server) as session:
            await session.send_ping()
            tools = await session.list_tools()
            assert "create_entities" in {tool.name for tool in tools.tools}
            resources = await session.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["memory://knowledge-graph"]
            created = await session.call_tool("create_entities", {"entities": [entity("Ada", "wrote notes")]})
            assert created.is_error is False
            found = await session.call_tool("open_nodes", {"names": ["Ada"]})
            assert "wrote notes" in found.content[0].text
            assert await server.stop() == 0
    assert [e.name for e in stored_graph(memory).entities] == ["Ada"]


async def test_many_sessions_at_once_share_one_memory(tmp_path: Path):
    memory = tmp_path / "memory.db"

    async def client(server: NetworkServer, number: int) -> None:
        async with sdk_session(server) as session:
            for i in range(10):
                result = await session.call_tool("create_entities", {"entities": [entity(f"C{number}-{i}")]})
                assert result.is_error is False, result

    with anyio.fail_after(90):
        async with network_server(memory, "--http") as server:
            async with anyio.create_task_group() as tasks:
                for number in range(6):
                    tasks.start_soon(client, server, number)
            assert await server.stop() == 0
    assert len(stored_graph(memory).entities) == 60


async def test_health_answers_ok_without_a_token(tmp_path: Path):
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--http", env=token_env()) as server, httpx2.AsyncClient() as http:
            response = await http.get(f"{server.base}/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


async def test_without_the_token_mcp_answers_401_and_with_it_the_session_opens(tmp_path: Path):
    body = json.dumps(INITIALIZE)
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--http", env=token_env()) as server, httpx2.AsyncClient() as http:
            missing = await http.post(server.url, content=body, headers=ACCEPT)
            wrong = await http.post(server.url, content=body, headers=ACCEPT | {"authorization": "Bearer nope"})
            basic = await http.post(server.url, content=body, headers=ACCEPT | {"authorization": f"Basic {TOKEN}"})
            right = await http.post(server.url, content=body, headers=ACCEPT | {"authorization": f"Bearer {TOKEN}"})
            async with sdk_session(server, TOKEN) as session:
                await session.send_ping()
    assert [missing.status_code, wrong.status_code, basic.status_code] == [401, 401, 401]
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in missing.json()["error"]["message"]
    assert right.status_code == 200
    assert "result" in sse_json(right)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
async def test_a_foreign_host_gets_421_and_a_foreign_origin_403_on_every_bind_address(tmp_path: Path, host: str):
    auth = {"authorization": f"Bearer {TOKEN}"}
    body = json.dumps(INITIALIZE)
    with anyio.fail_after(30):
        async with (
            network_server(tmp_path / "m.db", "--http", "--host", host, env=token_env()) as server,
            httpx2.AsyncClient() as http,
        ):
            foreign_host = await http.post(server.url, content=body, headers=ACCEPT | auth | {"host": "evil.example"})
            rebound = await http.post(
                server.url, content=body, headers=ACCEPT | auth | {"host": f"evil.example:{server.port}"}
            )
            foreign_origin = await http.post(
                server.url, content=body, headers=ACCEPT | auth | {"origin": "http://evil.example"}
            )
            null_origin = await http.post(server.url, content=body, headers=ACCEPT | auth | {"origin": "null"})
            local_origin = await http.post(
                server.url, content=body, headers=ACCEPT | auth | {"origin": f"http://localhost:{server.port}"}
            )
    assert [foreign_host.status_code, rebound.status_code] == [421, 421]
    assert [foreign_origin.status_code, null_origin.status_code] == [403, 403]
    assert local_origin.status_code == 200


async def test_an_allowed_host_and_origin_given_on_the_command_line_pass(tmp_path: Path):
    body = json.dumps(INITIALIZE)
    args = ("--http", "--allowed-host", "memory.example", "--allowed-origin", "https://app.example")
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", *args) as server, httpx2.AsyncClient() as http:
            named = await http.post(server.url, content=body, headers=ACCEPT | {"host": "memory.example:443"})
            origin = await http.post(server.url, content=body, headers=ACCEPT | {"origin": "https://app.example"})
            other = await http.post(server.url, content=body, headers=ACCEPT | {"origin": "https://other.example"})
    assert (named.status_code, origin.status_code, other.status_code) == (200, 200, 403)


async def _open_session(http: httpx2.AsyncClient, server: NetworkServer) -> dict[str, str]:
    opened = await http.post(server.url, content=json.dumps(INITIALIZE), headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    done = await http.post(server.url, content=json.dumps(INITIALIZED), headers=ACCEPT | session)
    assert done.status_code == 202
    return session


async def test_an_oversized_body_gets_413_and_changes_nothing(tmp_path: Path):
    memory = tmp_path / "memory.db"
    huge = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "create_entities", "arguments": {"entities": [entity("Big", "x" * (5 * 1024 * 1024))]}},
    }
    with anyio.fail_after(30):
        async with network_server(memory, "--http") as server, httpx2.AsyncClient() as http:
            session = await _open_session(http, server)
            response = await http.post(server.url, content=json.dumps(huge), headers=ACCEPT | session)
            ping = await http.post(
                server.url, content=json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}), headers=ACCEPT | session
            )
    assert response.status_code == 413
    assert ping.status_code == 200, "the session survives a refused body"
    assert stored_graph(memory).entities == ()


async def test_delete_ends_the_session_and_its_id_then_gets_404(tmp_path: Path):
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--http") as server, httpx2.AsyncClient() as http:
            session = await _open_session(http, server)
            before = await http.post(server.url, content=ping, headers=ACCEPT | session)
            ended = await http.delete(server.url, headers=session)
            after = await http.post(server.url, content=ping, headers=ACCEPT | session)
    assert before.status_code == 200
    assert sse_json(before)["result"] == {}
    assert ended.status_code == 200
    assert after.status_code == 404


async def test_a_batch_past_the_limit_is_a_tool_error_and_changes_nothing(tmp_path: Path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(60):
        async with network_server(memory, "--http") as server, sdk_session(server) as session:
            result = await session.call_tool("create_entities", {"entities": [entity(f"E{i}") for i in range(1001)]})
    assert result.is_error is True
    assert "1,000" in result.content[0].text or "1000" in result.content[0].text
    assert stored_graph(memory).entities == ()


async def test_sigterm_answers_the_calls_in_flight_and_every_acknowledged_write_is_stored(tmp_path: Path):
    memory = tmp_path / "memory.db"
    acknowledged: list[str] = []
    enough = anyio.Event()

    async def writer(session: ClientSession, number: int) -> None:
        for i in range(200):
            name = f"W{number}-{i}"
            try:
                result = await session.call_tool("create_entities", {"entities": [entity(name, "fact")]})
            except Exception:
                return  # the server stopped: this call was not acknowledged
            if result.is_error:
                return
            acknowledged.append(name)
            if len(acknowledged) >= 30:
                enough.set()

    with anyio.fail_after(90):
        async with network_server(memory, "--http") as server, anyio.create_task_group() as tasks:
            sessions = [await tasks.start(_hold_session, server) for _ in range(3)]
            for number, session in enumerate(sessions):
                tasks.start_soon(writer, session, number)
            # Stopped while the writers are mid-flight, each with a call in the air.
            await enough.wait()
            os.kill(server.process.pid, signal.SIGTERM)
            status = await server.process.wait()
            tasks.cancel_scope.cancel()
    assert status == 0, server.log()
    stored = {e.name for e in stored_graph(memory).entities}
    assert set(acknowledged) <= stored


async def _hold_session(server: NetworkServer, *, task_status: Any) -> None:
    # The server stops under this session, and the SDK's client may then fail on its way
    # out (the GET stream, the closing DELETE); what the test judges is what was acknowledged.
    with contextlib.suppress(Exception):
        async with sdk_session(server) as session:
            task_status.started(session)
            await anyio.sleep_forever()


async def test_the_memory_files_are_readable_by_the_owner_only(tmp_path: Path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(30):
        async with network_server(memory, "--http") as server, sdk_session(server) as session:
            await session.call_tool("create_entities", {"entities": [entity("A")]})
            modes = {path.name: path.stat().st_mode & 0o777 for path in tmp_path.glob("memory.db*")}
    assert modes and set(modes.values()) == {0o600}, modes


# -- nothing idle holds a place for long -------------------------------------------------------


async def _read_until_closed(stream: anyio.abc.SocketStream) -> bytes:
    data = b""
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
        while True:
            data += await stream.receive()
    return data


async def test_connections_that_send_no_complete_request_are_closed_after_the_request_timeout(tmp_path: Path):
    partial = [
        b"",
        b"POST /mcp HTTP/1.1\r\nHost: 127",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    ]
    env = {"GRAPHMEM_REQUEST_TIMEOUT": "1"}
    with anyio.fail_after(60):
        async with network_server(tmp_path / "m.db", "--http", env=env) as server:
            streams = [await anyio.connect_tcp("127.0.0.1", server.port) for _ in range(30)]
            for number, stream in enumerate(streams):
                if partial[number % 3]:
                    await stream.send(partial[number % 3])
            with anyio.fail_after(20):
                answers = [await _read_until_closed(stream) for stream in streams]
            for stream in streams:
                await stream.aclose()
            async with sdk_session(server) as session:
                await session.send_ping()
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers), set(answers)


async def test_a_full_session_table_of_abandoned_sessions_does_not_lock_out_a_new_client(tmp_path: Path):
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    env = {"GRAPHMEM_MAX_SESSIONS": "3"}
    with anyio.fail_after(60):
        async with network_server(tmp_path / "m.db", "--http", env=env) as server, httpx2.AsyncClient() as http:
            abandoned = [await _open_session(http, server) for _ in range(3)]
            async with sdk_session(server) as session:
                result = await session.call_tool("create_entities", {"entities": [entity("Newcomer")]})
            oldest = await http.post(server.url, content=ping, headers=ACCEPT | abandoned[0])
            newest = await http.post(server.url, content=ping, headers=ACCEPT | abandoned[-1])
    assert result.is_error is False
    assert oldest.status_code == 404, "the least recently used idle session made room"
    assert newest.status_code == 200


async def test_a_session_unused_past_the_session_timeout_is_ended(tmp_path: Path):
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    env = {"GRAPHMEM_SESSION_TIMEOUT": "0.5"}
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--http", env=env) as server, httpx2.AsyncClient() as http:
            session = await _open_session(http, server)
            used = await http.post(server.url, content=ping, headers=ACCEPT | session)
            await anyio.sleep(1.5)  # past the timeout: what is measured is the server's clock, not this one
            unused = await http.post(server.url, content=ping, headers=ACCEPT | session)
    assert used.status_code == 200
    assert unused.status_code == 404


@pytest.mark.parametrize("mode", ["--sse-response", "--json-response"])
async def test_a_subscriber_hears_of_its_own_writes_whether_answers_are_streams_or_json(tmp_path: Path, mode: str):
    # With JSON answers a notice cannot ride the POST's answer: it goes on the session's GET stream.
    heard = anyio.Event()
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            heard.set()

    memory = tmp_path / "memory.db"
    with anyio.fail_after(60):
        async with (
            network_server(memory, "--http", mode) as server,
            Client(server.url, mode="legacy", message_handler=on_message) as client,
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(GRAPH_URI)
            created = await client.call_tool("create_entities", {"entities": [entity("Ada")]})
            assert created.is_error is False
            await heard.wait()
    assert updates == [GRAPH_URI]
