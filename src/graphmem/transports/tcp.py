"""The TCP transport: newline-delimited JSON-RPC (spec 004), many connections at once.

Each connection is served like stdio (same line handling, same errors for bad lines,
same answers to requests read before the client closed), and all of them share the
one store the server's lifespan opens:

    listener ─► connection ─► [token check] ─► line_channel ─► serve loop ─┐
             ─► connection ─► ...                                          ├─► one AppState, one store
             ─► connection ─► ...                                         ─┘

The token rule: when the server has a token, the first line of every connection must be

    {"jsonrpc":"2.0","id":1,"method":"graphmem/authenticate","params":{"token":"TOKEN"}}

answered with `{"jsonrpc":"2.0","id":1,"result":{}}`; then MCP starts as usual with
`initialize`. Any other first line, a wrong token, or nothing within the request
timeout gets a JSON-RPC error (code -32001) and the connection is closed. With named
tokens (--tokens-file), the token's identity rides on every message of the connection
(`ctx.request`), so a read-only token cannot write and changes record their author.

With or without a token, the first MCP line must open MCP (`initialize`, or a request of
protocol 2026-07-28, which has no handshake), and a line that
looks like HTTP ends the connection: a web page can make a browser send an HTTP
request with JSON-RPC lines in its body to this port (see `gate.py`). Either way
the connection gets one error line (id null) and is closed, having run nothing.

Time limits, so that silent connections cannot hold the `MAX_CONNECTIONS` slots:
each opening line (the token, `initialize`) must arrive within
`network.request_timeout` seconds, and a connection that has sent nothing for
`network.idle_timeout` seconds while no call of its was running is closed.

On SIGINT or SIGTERM the listener closes, every connection stops reading, the
requests already read are answered (within `DRAIN_SECONDS`), and the store closes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import SocketAttribute, SocketStream
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_dual_era_loop

from graphmem.config import Credential, Identity, NetworkSettings
from graphmem.server import AppState, initialization_options
from graphmem.transports.channel import line_channel
from graphmem.transports.gate import first_line_opens_mcp, refuse, refuse_http_lines
from graphmem.transports.guard import identify
from graphmem.transports.lines import MessageError, encode_message, error_line, parse_message, read_lines
from graphmem.transports.loop import event_loop_options, wait_for_stop_signal

__all__ = ["AUTH_METHOD", "MAX_CONNECTIONS", "UNAUTHORIZED", "run_tcp", "serve_tcp"]

logger = logging.getLogger(__name__)

AUTH_METHOD = "graphmem/authenticate"
"""The method of the first message when the server has a token."""

MAX_CONNECTIONS = 256
"""Connections served at once; one more is told so and closed."""

UNAUTHORIZED = -32001
"""The JSON-RPC error code for a missing or wrong token (in the server-defined range)."""


class _SocketReader:
    """`read(n)` over a socket stream, returning b"" at the end as a file does."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream

    async def read(self, n: int) -> bytes:
        try:
            return await self._stream.receive(n)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return b""


def _writer(stream: SocketStream) -> Callable[[bytes], Any]:
    lock = anyio.Lock()

    async def write(data: bytes) -> bool:
        # The answers and the error lines come from two tasks; a socket takes one send at a time.
        async with lock:
            try:
                await stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return False
        return True

    return write


def _refusal(message: str, request_id: Any = None) -> bytes:
    return error_line(MessageError(UNAUTHORIZED, message, request_id))


async def _next_line(lines: AsyncIterator[bytes | MessageError], seconds: float) -> bytes | MessageError | None:
    """The next line, or None at the end of the stream or when none came within `seconds`."""
    with anyio.move_on_after(seconds):
        return await anext(lines, None)
    return None


async def _authenticate(
    lines: AsyncIterator[bytes | MessageError], credentials: tuple[Credential, ...], seconds: float
) -> tuple[Identity | None, bytes]:
    """Read the first line and check its token; returns whose it is (None: refused) and the line to answer with."""
    how = (
        f'Unauthorized: this server needs a token. Send {{"jsonrpc":"2.0","id":1,"method":"{AUTH_METHOD}",'
        '"params":{"token":"TOKEN"}} as the first line, then initialize.'
    )
    first = await _next_line(lines, seconds)
    if first is None or isinstance(first, MessageError):
        return None, _refusal(how)
    try:
        message = parse_message(first)
    except MessageError as error:
        return None, _refusal(how, error.request_id)
    if not isinstance(message, types.JSONRPCRequest) or message.method != AUTH_METHOD:
        return None, _refusal(how, getattr(message, "id", None))
    presented = (message.params or {}).get("token")
    # Compared with every token in constant time, as over HTTP (`guard.identify`).
    identity = identify(presented, credentials) if isinstance(presented, str) else None
    if identity is None:
        return None, _refusal("Unauthorized: the token is wrong.", message.id)
    return identity, encode_message(types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={}))


async def _chain(first: bytes, rest: AsyncIterator[bytes | MessageError]) -> AsyncIterator[bytes | MessageError]:
    yield first
    async for line in rest:
        yield line


async def serve_tcp(
    server: Server[AppState],
    network: NetworkSettings,
    *,
    announce: Callable[[str], None],
    stop: anyio.Event,
) -> None:
    """Serve MCP over TCP until `stop` is set, then stop gracefully.

    Args:
        server: the MCP server; its lifespan (the store) is entered once for every connection.
        network: where to listen, the token, if any, and the time limits.
        announce: told the address (`tcp://host:port`) once the server listens.
        stop: set it to stop: no new connections, and each one ends once it has answered what it read.
    """
    slots = anyio.CapacityLimiter(MAX_CONNECTIONS)
    options = initialization_options(server)

    async with server.lifespan(server) as state:

        async def handle(stream: SocketStream) -> None:
            async with stream:
                write = _writer(stream)
                try:
                    slots.acquire_nowait()
                except anyio.WouldBlock:
                    await write(_refusal(f"Too many connections (the limit is {MAX_CONNECTIONS}); try again shortly."))
                    return
                try:
                    lines = read_lines(_SocketReader(stream))
                    identity: Identity | None = None
                    if network.credentials:
                        identity, answer = await _authenticate(lines, network.credentials, network.request_timeout)
                        await write(answer)
                        if identity is None:
                            return
                    first = await _next_line(lines, network.request_timeout)
                    refusal = first_line_opens_mcp(first)
                    if refusal is not None or not isinstance(first, bytes):
                        await write(refuse(refusal or ""))
                        return
                    served = _chain(first, refuse_http_lines(lines, write))
                    async with line_channel(
                        served, write, stop, idle_seconds=network.idle_timeout, request_context=identity
                    ) as (read_stream, write_stream):
                        await serve_dual_era_loop(
                            server, read_stream, write_stream, lifespan_state=state, init_options=options
                        )
                finally:
                    slots.release()

        listener = await anyio.create_tcp_listener(local_host=network.host, local_port=network.port)
        port = listener.extra(SocketAttribute.local_port)
        shown = f"[{network.host}]" if ":" in network.host else network.host
        announce(f"tcp://{shown}:{port}")
        async with anyio.create_task_group() as connections, anyio.create_task_group() as accepting:

            async def stop_accepting() -> None:
                await stop.wait()
                accepting.cancel_scope.cancel()

            accepting.start_soon(stop_accepting)
            async with listener:
                await listener.serve(handle, connections)
            # The connections see `stop` too: each stops reading, answers what it read, and ends.


def run_tcp(server: Server[AppState], network: NetworkSettings, *, announce: Callable[[str], None]) -> None:
    """Serve MCP over TCP until SIGINT or SIGTERM, then stop gracefully."""
    anyio.run(_serve_until_signal, server, network, announce, backend_options=event_loop_options())


async def _serve_until_signal(
    server: Server[AppState], network: NetworkSettings, announce: Callable[[str], None]
) -> None:
    stop = anyio.Event()
    async with anyio.create_task_group() as tasks:

        async def on_signal() -> None:
            await wait_for_stop_signal()
            stop.set()

        tasks.start_soon(on_signal)
        await serve_tcp(server, network, announce=announce, stop=stop)
        tasks.cancel_scope.cancel()
