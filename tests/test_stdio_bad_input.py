"""Bad input over a real stdio pipe: an error answer at once, and the connection keeps working.

A client that gets no answer waits for ever, so silence is the worst answer there is.
Each test writes one bad line to the module's `python -m graphmem` (one process on one
connection: starting one costs about a second of CPU), expects a JSON-RPC answer within
seconds (with the request's id when it could be read), and then checks that the next
request on the same connection is served and that the bad line stored nothing.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.helpers_stdio import START_SECONDS, RawServer, create_entities, entity, is_tool_success, raw_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# An answer to a bad line comes at once; this only bounds a wait for one that never comes.
ANSWER_SECONDS = 10.0


def tool_call(request_id: int, name: str, arguments: bytes) -> bytes:
    """A tools/call line with `arguments` spliced in as bytes, so they can be anything, valid JSON or not."""
    head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"{name}","arguments":'
    return head.encode() + arguments + b"}}"


def deep_observations(depth: int) -> bytes:
    nest = b"[" * depth + b"]" * depth
    return tool_call(
        7, "create_entities", b'{"entities":[{"name":"Deep","entityType":"t","observations":' + nest + b"}]}"
    )


async def served_entities(server: RawServer) -> list[str]:
    answer = await server.call(("tools/call", {"name": "read_graph", "arguments": {}}))
    return [e["name"] for e in answer["result"]["structuredContent"]["entities"]]


_afters = itertools.count(1)


async def assert_still_serving(server: RawServer, before: list[str]) -> None:
    """The next request on the connection works: a ping, then a write that is stored beside what was `before`."""
    after = f"After {next(_afters)}"  # a name no other test on this server writes
    with anyio.fail_after(ANSWER_SECONDS):
        assert (await server.request("ping"))["result"] == {}
        created = await server.call(create_entities(entity(after)))
        assert is_tool_success(created), created
        assert sorted(await served_entities(server)) == sorted([*before, after])


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RawServer]:
    """The module's server, initialized: every test writes its bad lines on this one connection."""
    async with raw_server(tmp_path_factory.mktemp("bad-input") / "memory.db") as shared:
        with anyio.fail_after(START_SECONDS):
            await shared.initialize()
        yield shared


BAD_LINES = [
    # A parse error is answered with a null id, as JSON-RPC requires, even when the id can be seen.
    pytest.param(
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":', None, types.PARSE_ERROR, id="invalid-json"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_entities","arguments":'
        b'{"entities":[{"name":"Bad\xff\xfe","entityType":"t","observations":[]}]}}}',
        None,
        types.PARSE_ERROR,
        id="invalid-utf8",
    ),
    pytest.param(deep_observations(300), 7, types.INVALID_REQUEST, id="nested-300"),
    pytest.param(deep_observations(5000), 7, types.INVALID_REQUEST, id="nested-5000"),
    pytest.param(
        tool_call(7, "create_entities", json.dumps({"entities": [entity("Big", "x" * (20 * 1024 * 1024))]}).encode()),
        7,
        types.INVALID_REQUEST,
        id="line-of-20-MB",
    ),
    pytest.param(b"42", None, types.INVALID_REQUEST, id="a-number"),
    pytest.param(b'"create_entities"', None, types.INVALID_REQUEST, id="a-string"),
    pytest.param(b"null", None, types.INVALID_REQUEST, id="null"),
    pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"memory/forget_everything"}', 7, -32601, id="unknown-method"),
    pytest.param(b'{"jsonrpc":"2.0","id":null,"method":"ping"}', None, types.INVALID_REQUEST, id="id-null"),
    pytest.param(b'{"jsonrpc":"2.0","id":7.5,"method":"ping"}', 7.5, types.INVALID_REQUEST, id="id-fraction"),
    pytest.param(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', None, types.INVALID_PARAMS, id="id-surrogate"),
]


@pytest.mark.parametrize(("raw", "request_id", "code"), BAD_LINES)
async def test_a_bad_line_gets_an_error_answer_at_once_and_the_connection_keeps_working(
    server: RawServer, raw: bytes, request_id: Any, code: int
):
    with anyio.fail_after(ANSWER_SECONDS):
        before = await served_entities(server)
        await server.send_line(raw)
        answer = await server.receive()
    assert answer["id"] == request_id, answer
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["message"]
    await assert_still_serving(server, before)


async def test_a_lone_surrogate_in_a_tool_argument_is_refused_and_nothing_is_stored(server: RawServer):
    raw = tool_call(7, "create_entities", b'{"entities":[{"name":"S\\ud800","entityType":"t","observations":[]}]}')
    with anyio.fail_after(ANSWER_SECONDS):
        before = await served_entities(server)
        await server.send_line(raw)
        answer = await server.receive()
        assert answer["id"] == 7
        # A JSON-RPC error or a tool error would both do; never a success.
        assert "error" in answer or answer["result"]["isError"] is True, answer
        assert await served_entities(server) == before
    await assert_still_serving(server, before)


async def test_a_batch_gets_an_error_for_each_request_in_it_and_none_is_served(server: RawServer):
    batch = [
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": create_entities(entity("InBatch"))[1]},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "twelve", "method": "ping"},
    ]
    with anyio.fail_after(ANSWER_SECONDS):
        before = await served_entities(server)
        await server.send_line(json.dumps(batch).encode())
        answers = json.loads(await server.receive_line())
        assert [(a["id"], a["error"]["code"]) for a in answers] == [
            (11, types.INVALID_REQUEST),
            ("twelve", types.INVALID_REQUEST),
        ]
        assert "batches are not supported" in answers[0]["error"]["message"]
        assert await served_entities(server) == before
    await assert_still_serving(server, before)


async def test_tools_call_with_null_arguments_is_answered_and_changes_nothing(server: RawServer):
    with anyio.fail_after(ANSWER_SECONDS):
        graph = (await server.call(("tools/call", {"name": "read_graph", "arguments": {}})))["result"]
        await server.send_line(tool_call(7, "create_entities", b"null"))
        create = await server.receive()
        await server.send_line(tool_call(8, "read_graph", b"null"))
        read = await server.receive()
    assert create["id"] == 7
    assert "error" in create or create["result"]["isError"] is True, create
    # read_graph takes no arguments, so null arguments are as good as none.
    assert read["id"] == 8
    assert read["result"]["structuredContent"] == graph["structuredContent"]
    await assert_still_serving(server, [e["name"] for e in graph["structuredContent"]["entities"]])


async def test_every_kind_of_bad_line_written_in_a_row_is_answered_on_one_connection(server: RawServer):
    cases = [param.values for param in BAD_LINES if param.id != "line-of-20-MB"]
    with anyio.fail_after(ANSWER_SECONDS):
        before = await served_entities(server)
        # All written before any answer is read.
        for raw, _, _ in cases:
            await server.send_line(raw)
        answers = [await server.receive() for _ in cases]
    # The transport answers most at once, the server answers the unknown method: any order.
    assert sorted(repr((a["id"], a["error"]["code"])) for a in answers) == sorted(
        repr((request_id, code)) for _, request_id, code in cases
    )
    await assert_still_serving(server, before)


async def test_a_lone_surrogate_in_the_memory_file_is_served_as_a_replacement_character(tmp_path):
    memory = tmp_path / "memory.jsonl"
    memory.write_text(
        '{"type":"entity","name":"Bad\\ud800","entityType":"t","observations":["o"]}\n'
        '{"type":"entity","name":"Good","entityType":"t","observations":[]}\n',
        encoding="utf-8",
    )
    with anyio.fail_after(START_SECONDS):
        async with raw_server(memory) as server:
            await server.initialize()
            with anyio.fail_after(ANSWER_SECONDS):
                names = await served_entities(server)
                assert (await server.request("ping"))["result"] == {}
    assert names == ["Bad\ufffd", "Good"]
