"""A line channel: the MCP server's streams over any byte stream of one JSON-RPC message per line.

stdio and every TCP connection use it the same way:

    lines ─► parse_message ─┬─► Server ─► pump_out ─► write
                            └─► (error line) ───────────┘

When the lines end (EOF) or `stop` is set (the server is shutting down), the requests
already read are still answered, within `DRAIN_SECONDS`, before the server's streams
close: the SDK alone would cancel them with "Connection closed". When `write` reports
that the peer is gone, nobody can read an answer any more, so reading stops too.
With `idle_seconds`, reading also stops once the peer has sent nothing for that long
while none of its requests was being served (a long call is not idleness).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from graphmem.transports.lines import InFlight, MessageError, encode_message, error_line, parse_message, track

__all__ = ["DRAIN_SECONDS", "LineWriter", "line_channel"]

logger = logging.getLogger(__name__)

DRAIN_SECONDS = 30.0
"""How long requests still in flight when the input ends may take to be answered."""

LineWriter = Callable[[bytes], Awaitable[bool]]
"""Writes one whole line; returns False once the peer has gone and nothing more can be written."""

ServerStreams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@asynccontextmanager
async def line_channel(
    lines: AsyncIterator[bytes | MessageError],
    write: LineWriter,
    stop: anyio.Event | None = None,
    *,
    idle_seconds: float | None = None,
    request_context: Any = None,
) -> AsyncIterator[ServerStreams]:
    """Streams for `Server.run` (or the SDK's serve loops) over a line reader and writer.

    Args:
        lines: the lines read from the peer, as `read_lines` yields them.
        write: writes a line to the peer; it must not be called by two tasks at once
            unless it serialises itself.
        stop: when set, reading ends as at EOF (the requests read are still answered).
        idle_seconds: when given, reading ends as at EOF once nothing has been read for this
            long and no request is waiting for its answer.
        request_context: attached to every message read, for the handlers as `ctx.request`
            (the caller's identity, on a TCP connection that presented a token).
    """
    metadata = None if request_context is None else ServerMessageMetadata(request_context=request_context)
    to_server, from_peer = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_peer, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    in_flight = InFlight()
    reading = anyio.CancelScope()
    peer_gone = False
    last_heard = anyio.current_time()

    async def send(data: bytes) -> None:
        nonlocal peer_gone
        if peer_gone:
            return
        if not await write(data):
            # Nobody reads the answers any more: stop reading requests, so the server ends.
            peer_gone = True
            reading.cancel()

    async def stop_reading_on(event: anyio.Event) -> None:
        await event.wait()
        reading.cancel()

    async def stop_reading_when_idle(seconds: float) -> None:
        while True:
            await in_flight.wait_idle()
            # The clock starts at the last line read or the last answer written, whichever is later.
            left = last_heard + seconds - anyio.current_time()
            if left <= 0:
                logger.debug("closing a connection idle for %g seconds", seconds)
                reading.cancel()
                return
            await anyio.sleep(left)

    async def pump_in() -> None:
        nonlocal last_heard
        async with to_server:
            with reading:
                async for line in lines:
                    last_heard = anyio.current_time()
                    if isinstance(line, MessageError):
                        await send(error_line(line))
                        continue
                    try:
                        message = parse_message(line)
                    except MessageError as error:
                        logger.debug("answered a bad message with an error: %s", error.message)
                        await send(error_line(error))
                        continue
                    track(message, in_flight)
                    # Only the read may be cut short by `stop`: a request counted in flight
                    # must reach the server, or the drain below would wait for it in vain.
                    with anyio.CancelScope(shield=True):
                        await to_server.send(SessionMessage(message, metadata=metadata))
            # EOF or stop. Closing the server's stream now would cancel the requests in flight.
            if not peer_gone:
                with anyio.move_on_after(DRAIN_SECONDS):
                    await in_flight.wait_idle()

    async def pump_out() -> None:
        nonlocal last_heard
        async with from_server:
            async for item in from_server:
                message = item.message
                await send(encode_message(message))
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    last_heard = anyio.current_time()
                    in_flight.settle(message.id)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pump_in)
        tasks.start_soon(pump_out)
        if stop is not None:
            tasks.start_soon(stop_reading_on, stop)
        if idle_seconds is not None:
            tasks.start_soon(stop_reading_when_idle, idle_seconds)
        try:
            yield from_peer, to_peer
        finally:
            tasks.cancel_scope.cancel()
