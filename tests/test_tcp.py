"""`graphmem serve --tcp` as a process on loopback: raw lines, the token rule, the SDK's session, many connections."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from graphmem.transports.tcp import AUTH_METHOD, UNAUTHORIZED
from tests.helpers_network import TOKEN, TcpClient, network_server, tcp_client, tcp_session
from tests.helpers_stdio import INITIALIZE, INITIALIZED, create_entities, entity, is_tool_success
from tests.test_durability import stored_graph

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_without_a_token_a_connection_initializes_and_a_bad_line_gets_an_error_not_a_hangup(tmp_path: Path):
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--tcp") as server, tcp_client(server) as client:
            await client.initialize()
            await client.send_line(b"{not json")
            bad = await client.receive()
            ping = await client.request("ping")
    assert bad["error"]["code"] == -32700
    assert ping["result"] == {}


async def test_with_a_token_a_first_line_that_is_not_the_token_gets_an_error_and_the_connection_closes(
    tmp_path: Path,
):
    env = {"GRAPHMEM_TOKEN": TOKEN}
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--tcp", env=env) as server:
            async with tcp_client(server) as client:
                refused = await client.request("ping")
                closed = await client.receive_line()
            async with tcp_client(server) as client:
                wrong = await client.authenticate("x" * 32)
                closed_after_wrong = await client.receive_line()
            async with tcp_client(server) as client:
                right = await client.authenticate()
                await client.initialize()
                created = await client.call(create_entities(entity("Ada")))
    assert refused["error"]["code"] == UNAUTHORIZED
    assert AUTH_METHOD in refused["error"]["message"]
    assert closed is None
    assert wrong["error"] == {"code": UNAUTHORIZED, "message": "Unauthorized: the token is wrong."}
    assert closed_after_wrong is None
    assert right["result"] == {}
    assert is_tool_success(created)


async def test_the_sdk_client_session_works_over_a_tcp_connection(tmp_path: Path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(30):
        async with (
            network_server(memory, "--tcp", env={"GRAPHMEM_TOKEN": TOKEN}) as server,
            tcp_session(server) as session,
        ):
            await session.send_ping()
            assert "read_graph" in {tool.name for tool in (await session.list_tools()).tools}
            result = await session.call_tool("create_entities", {"entities": [entity("Grace", "compiler")]})
            assert result.is_error is False
    assert [e.name for e in stored_graph(memory).entities] == ["Grace"]


async def test_many_connections_write_at_once_and_every_write_is_stored(tmp_path: Path):
    memory = tmp_path / "memory.db"

    async def connection(server, number: int) -> None:
        async with tcp_client(server) as client:
            await client.initialize()
            for i in range(25):
                assert is_tool_success(await client.call(create_entities(entity(f"T{number}-{i}", "fact"))))

    with anyio.fail_after(60):
        async with network_server(memory, "--tcp") as server:
            async with anyio.create_task_group() as tasks:
                for number in range(8):
                    tasks.start_soon(connection, server, number)
            assert await server.stop() == 0
    assert len(stored_graph(memory).entities) == 200


async def test_sigterm_answers_every_request_it_read_and_stores_exactly_what_it_answered(tmp_path: Path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(60):
        async with network_server(memory, "--tcp") as server, tcp_client(server) as client:
            await client.initialize()
            for i in range(50):
                await client.call_later(create_entities(entity(f"S{i}")))
            # Wait for the first answer, so the server is mid-way through the pipelined calls.
            answers = [json.loads(await client.receive_line() or b"null")]
            status = await server.stop()
            while (line := await client.receive_line()) is not None:
                answers.append(json.loads(line))
    assert status == 0, server.log()
    assert all(is_tool_success(answer) for answer in answers), answers
    answered = {answer["result"]["structuredContent"]["entities"][0]["name"] for answer in answers}
    assert {e.name for e in stored_graph(memory).entities} == answered


# -- what a web page can send: an HTTP request is refused before anything runs ------------------


async def read_until_closed(client, seconds: float = 10) -> list[dict]:
    """Every line the server sends until it closes the connection (fails if it never does)."""
    lines = []
    with anyio.fail_after(seconds):
        while (line := await client.receive_line()) is not None:
            lines.append(json.loads(line))
    return lines


def call_message(request_id: int, call: tuple[str, dict]) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": call[0], "params": call[1]}


def jsonrpc_lines(*messages: dict) -> bytes:
    return b"".join(json.dumps(message).encode("utf-8") + b"\n" for message in messages)


async def test_an_http_post_whose_body_holds_jsonrpc_lines_creates_nothing_and_is_closed(tmp_path: Path):
    memory = tmp_path / "memory.db"
    # What a cross-site fetch() with a text/plain body puts on the wire.
    body = jsonrpc_lines(INITIALIZE, INITIALIZED, call_message(2, create_entities(entity("Mallory"))))
    with anyio.fail_after(30):
        async with network_server(memory, "--tcp") as server, tcp_client(server) as client:
            head = (
                f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nOrigin: https://evil.example\r\n"
                f"Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            await client.stream.send(head.encode("ascii") + body)
            answers = await read_until_closed(client)
            assert await server.stop() == 0
    assert len(answers) == 1, answers
    assert answers[0]["id"] is None
    assert "HTTP" in answers[0]["error"]["message"]
    assert not stored_graph(memory).entities


@pytest.mark.parametrize(
    "first",
    [
        pytest.param({"jsonrpc": "2.0", "id": 1, "method": "ping"}, id="ping"),
        pytest.param(call_message(1, create_entities(entity("Mallory"))), id="tools-call"),
        pytest.param(INITIALIZED, id="initialized-notification"),
    ],
)
async def test_a_first_line_that_is_not_initialize_is_refused_and_the_connection_closed(tmp_path: Path, first):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(30):
        async with network_server(memory, "--tcp") as server, tcp_client(server) as client:
            await client.send(first)
            await client.send(INITIALIZE)
            answers = await read_until_closed(client)
            assert await server.stop() == 0
    assert len(answers) == 1, answers
    assert answers[0]["id"] is None
    assert "initialize" in answers[0]["error"]["message"]
    assert not stored_graph(memory).entities


async def test_with_a_token_the_line_after_authenticate_must_be_initialize(tmp_path: Path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(30):
        async with (
            network_server(memory, "--tcp", env={"GRAPHMEM_TOKEN": TOKEN}) as server,
            tcp_client(server) as client,
        ):
            assert (await client.authenticate())["result"] == {}
            await client.call_later(create_entities(entity("Mallory")))
            answers = await read_until_closed(client)
            assert await server.stop() == 0
    assert [answer["id"] for answer in answers] == [None]
    assert not stored_graph(memory).entities


@pytest.mark.parametrize("line", [b"Host: 127.0.0.1:8766", b"Origin: https://evil.example", b"GET / HTTP/1.1"])
async def test_a_line_that_looks_like_http_after_initialize_closes_the_connection_before_what_follows_runs(
    tmp_path: Path, line: bytes
):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(30):
        async with network_server(memory, "--tcp") as server, tcp_client(server) as client:
            await client.initialize()
            await client.send_line(line)
            await client.call_later(create_entities(entity("Mallory")))
            answers = await read_until_closed(client)
            assert await server.stop() == 0
    assert [answer["id"] for answer in answers] == [None]
    assert "HTTP" in answers[0]["error"]["message"]
    assert not stored_graph(memory).entities


# -- nothing idle holds a slot for long ---------------------------------------------------------


async def test_silent_connections_are_closed_after_the_request_timeout_and_a_new_client_is_served(tmp_path: Path):
    env = {"GRAPHMEM_REQUEST_TIMEOUT": "1"}
    with anyio.fail_after(60):
        async with network_server(tmp_path / "m.db", "--tcp", env=env) as server:
            streams = [await anyio.connect_tcp("127.0.0.1", server.port) for _ in range(30)]
            with anyio.fail_after(20):
                answers = [await read_until_closed(TcpClient(stream)) for stream in streams]
            for stream in streams:
                await stream.aclose()
            async with tcp_session(server, token=None) as session:
                await session.send_ping()
    assert all(len(lines) == 1 and "in time" in lines[0]["error"]["message"] for lines in answers), answers


async def test_an_initialized_connection_with_nothing_to_do_is_closed_after_the_idle_timeout(tmp_path: Path):
    env = {"GRAPHMEM_IDLE_TIMEOUT": "1"}
    with anyio.fail_after(30):
        async with network_server(tmp_path / "m.db", "--tcp", env=env) as server, tcp_client(server) as client:
            await client.initialize()
            ping = await client.request("ping")
            closed = await client.receive_line()
    assert ping["result"] == {}
    assert closed is None
