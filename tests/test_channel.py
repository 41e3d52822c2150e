"""The line channel in process: what is read is answered, even when the server is told to stop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from graphmem.transports.channel import line_channel
from graphmem.transports.lines import MessageError

pytestmark = pytest.mark.anyio


async def two_pings() -> AsyncIterator[bytes | MessageError]:
    yield b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    yield b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    await anyio.sleep_forever()


async def test_a_stop_while_a_read_request_waits_for_the_server_still_answers_it():
    written: list[bytes] = []
    stop = anyio.Event()

    async def write(data: bytes) -> bool:
        written.append(data)
        return True

    with anyio.fail_after(5):
        async with line_channel(two_pings(), write, stop) as (read_stream, write_stream), read_stream, write_stream:
            first = await read_stream.receive()
            # The second request is read and waits for the server to take it: stop now.
            stop.set()
            await anyio.sleep(0)
            second = await read_stream.receive()
            for item in (first, second):
                assert isinstance(item, SessionMessage)
                request_id = item.message.id  # type: ignore[union-attr]
                await write_stream.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={})))
            # Both answered: the channel ends its input, which ends the server's loop.
            with pytest.raises(anyio.EndOfStream):
                await read_stream.receive()
    assert [json.loads(line)["id"] for line in written] == [1, 2]


async def test_a_bad_line_is_answered_with_an_error_and_the_next_one_is_served():
    written: list[bytes] = []

    async def lines() -> AsyncIterator[bytes | MessageError]:
        yield b"{oops"
        yield b'{"jsonrpc":"2.0","id":3,"method":"ping"}'

    async def write(data: bytes) -> bool:
        written.append(data)
        return True

    with anyio.fail_after(5):
        async with line_channel(lines(), write) as (read_stream, write_stream), read_stream, write_stream:
            item = await read_stream.receive()
            assert isinstance(item, SessionMessage)
            await write_stream.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=3, result={})))
    assert json.loads(written[0])["error"]["code"] == types.PARSE_ERROR
    assert json.loads(written[1]) == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_a_request_that_runs_longer_than_the_idle_timeout_does_not_make_the_connection_idle():
    written: list[bytes] = []
    answered = anyio.Event()

    async def lines() -> AsyncIterator[bytes | MessageError]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"slow"}'
        await answered.wait()
        yield b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
        await anyio.sleep_forever()

    async def write(data: bytes) -> bool:
        written.append(data)
        return True

    with anyio.fail_after(5):
        async with (
            line_channel(lines(), write, idle_seconds=0.1) as (read_stream, write_stream),
            read_stream,
            write_stream,
        ):
            slow = await read_stream.receive()
            await anyio.sleep(0.5)  # the call runs five idle periods
            answer = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={})
            await write_stream.send(SessionMessage(answer))
            answered.set()
            after = await read_stream.receive()
            await write_stream.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=2, result={})))
            # Then nothing comes: the connection is idle and its input ends.
            with pytest.raises(anyio.EndOfStream):
                await read_stream.receive()
    assert isinstance(slow, SessionMessage)
    assert isinstance(after, SessionMessage)
    assert after.message.id == 2  # type: ignore[union-attr]
    assert [json.loads(line)["id"] for line in written] == [1, 2]
