"""The stdio transport: one client over this process's stdin and stdout.

graphmem has its own stdio transport instead of the SDK's `stdio_server()`,
because that one stays silent on some messages it cannot use (a lone surrogate,
JSON nested a few hundred levels deep) and replaces invalid UTF-8 instead of
rejecting it; a client then waits for an answer that never comes. Here every line
that is not a usable JSON-RPC message gets a JSON-RPC error at once (see `lines`),
and the connection stays up. Reading is done with asyncio's pipe reader instead
of a thread hop per line, which also makes each call cheaper.

When stdin closes, the requests already read are still answered before the server
stops (see `channel`): a client that writes its requests and closes the pipe
(`printf … | graphmem`) gets every answer. When stdout closes, nobody can read an
answer any more, so the server stops quietly.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio
import anyio.to_thread
from mcp.server.lowlevel.server import Server

from graphmem.server import AppState, initialization_options
from graphmem.transports.channel import ServerStreams, line_channel
from graphmem.transports.lines import MAX_MESSAGE_BYTES, LineReader, read_lines
from graphmem.transports.loop import event_loop_options, wait_for_stop_signal

__all__ = ["guarded_stdio", "run_stdio"]


class _FileReader:
    """Reads a stdin that is not a pipe (`graphmem < requests.jsonl`) on a thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self._fd, n)


class _TerminalReader:
    """Reads a terminal (someone ran graphmem by hand) once the event loop sees a line typed.

    Not on a thread: a thread blocked reading a terminal cannot be cancelled, so Ctrl-C
    left the server waiting for one more line before it could exit.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int) -> bytes:
        await anyio.wait_readable(self._fd)
        return os.read(self._fd, n)


async def _open_stdin() -> LineReader:
    if os.isatty(sys.stdin.fileno()):
        return _TerminalReader(sys.stdin.fileno())
    mode = os.fstat(sys.stdin.fileno()).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        # What an MCP client hands over is a pipe or a socket. Anything else (a file,
        # /dev/null) is read on a thread: asyncio refuses a regular file,
        # and uvloop's libuv aborts the process on a file or /dev/null.
        return _FileReader(sys.stdin.fileno())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


def _claim_stdout() -> BinaryIO:
    """Keep fd 1 for protocol messages only: stray prints from any library go to stderr."""
    wire = os.fdopen(os.dup(1), "wb", buffering=0)
    # Writes below assume a blocking descriptor; a parent may have handed over a non-blocking one.
    os.set_blocking(wire.fileno(), True)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[ServerStreams]:
    """Streams for `Server.run` over this process's stdin and stdout."""
    reader = await _open_stdin()
    wire = _claim_stdout()

    async def write(data: bytes) -> bool:
        # A blocking write of whole lines: stdout is a pipe the client drains, and reading
        # ahead on stdin (asyncio buffers it) keeps a pipelining client from deadlocking.
        try:
            view = memoryview(data)
            while view:
                view = view[wire.write(view) or 0 :]
        except BrokenPipeError:
            return False
        return True

    async with line_channel(read_lines(reader), write) as streams:
        yield streams


async def _serve_stdio(server: Server[AppState]) -> None:
    async with anyio.create_task_group() as tasks:

        async def stop_on_signal() -> None:
            # Ctrl-C (or SIGTERM from a client that will not wait for stdin to close) ends the
            # serving here, inside the loop, through a cancel scope. Left to asyncio's own
            # SIGINT handler, which cancels the main task from outside, the cancellation was
            # now and then absorbed on the way out and the server never exited.
            await wait_for_stop_signal()
            tasks.cancel_scope.cancel()

        tasks.start_soon(stop_on_signal)
        async with guarded_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, initialization_options(server))
        tasks.cancel_scope.cancel()


def run_stdio(server: Server[AppState]) -> None:
    """Serve one client over stdin/stdout until stdin closes and every request read is answered,
    or until SIGINT or SIGTERM (the calls in progress are then cancelled; each write is either
    committed whole or not at all)."""
    anyio.run(_serve_stdio, server, backend_options=event_loop_options())
