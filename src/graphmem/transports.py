"""Transports: serve the MCP server over stdio.

graphmem has its own stdio transport instead of the SDK's `stdio_server()`,
because that one stays silent on some messages it cannot use (a lone surrogate,
JSON nested a few hundred levels deep) and replaces invalid UTF-8 instead of
rejecting it; a client then waits for an answer that never comes. Here every line
that is not a usable JSON-RPC message gets a JSON-RPC error at once (with the
request's id when it can be found), and the connection stays up. Reading is done
with asyncio's pipe reader instead of a thread hop per line, which also makes
each call cheaper.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel.server import Server
from mcp.shared.message import SessionMessage

from graphmem.server import AppState, initialization_options

__all__ = ["MAX_JSON_DEPTH", "MAX_MESSAGE_BYTES", "parse_message", "run_stdio"]

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest line accepted; longer ones are answered with an error and skipped."""

MAX_JSON_DEPTH = 64
"""The deepest nesting accepted; no MCP message needs more than a handful of levels."""

_CHUNK = 1 << 16
_ID_PATTERN = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class MessageError(Exception):
    """A line that cannot be served, with the JSON-RPC error to answer it with."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


def _guess_id(raw: bytes) -> Any:
    """The request id of a line that could not be parsed, if it can be seen in its first bytes."""
    match = _ID_PATTERN.search(raw[:4096])
    if match is None:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None


def _depth(raw: bytes) -> int:
    # Strings may hold brackets, so drop them first; then the brackets alone tell the depth.
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(1 if byte in b"[{" else -1 for byte in brackets), default=0)


def parse_message(raw: bytes) -> types.JSONRPCMessage:
    """Turn one line into a JSON-RPC message, or raise `MessageError` saying why not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError(
            types.PARSE_ERROR,
            f"Parse error: the message is not valid UTF-8 ({exc.reason} at byte {exc.start}).",
            _guess_id(raw),
        ) from None
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and _depth(raw) > MAX_JSON_DEPTH:
        raise MessageError(
            types.INVALID_REQUEST,
            f"Invalid request: JSON nested deeper than {MAX_JSON_DEPTH} levels; flatten the arguments.",
            _guess_id(raw),
        )
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MessageError(
            types.PARSE_ERROR, f"Parse error: the message is not valid JSON ({exc}).", _guess_id(raw)
        ) from None
    request_id = value.get("id") if isinstance(value, dict) else None
    if _SURROGATE_ESCAPE.search(raw):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise MessageError(
                types.INVALID_PARAMS,
                "Invalid params: the message contains an unpaired UTF-16 surrogate escape (such as \\ud800), "
                "which is not valid text; send well-formed Unicode.",
                request_id,
            ) from None
    try:
        return types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError as exc:
        first = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise MessageError(
            types.INVALID_REQUEST, f"Invalid request: not a JSON-RPC 2.0 message ({first}).", request_id
        ) from None


def _error_line(error: MessageError) -> bytes:
    request_id = error.request_id if isinstance(error.request_id, (str, int)) else None
    message = {"jsonrpc": "2.0", "id": request_id, "error": {"code": error.code, "message": error.message}}
    return json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"


async def _read_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes | MessageError]:
    """Yield each line of the stream; a line over the size limit yields an error instead."""
    buffer = bytearray()
    discarding = False
    head = b""
    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            if buffer.strip() and not discarding:
                yield bytes(buffer)
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if not discarding:
                buffer += piece
                if len(buffer) > MAX_MESSAGE_BYTES:
                    head = bytes(buffer[:4096])
                    buffer.clear()
                    discarding = True
            if newline < 0:
                break
            start = newline + 1
            if discarding:
                discarding = False
                yield MessageError(
                    types.INVALID_REQUEST,
                    f"Invalid request: the message is over {MAX_MESSAGE_BYTES // (1024 * 1024)} MB; "
                    "send less per call.",
                    _guess_id(head),
                )
            elif buffer.strip():
                yield bytes(buffer)
                buffer.clear()
            else:
                buffer.clear()


async def _open_stdin() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


def _claim_stdout() -> BinaryIO:
    """Keep fd 1 for protocol messages only: stray prints from any library go to stderr."""
    wire = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Streams for `Server.run` over this process's stdin and stdout."""
    reader = await _open_stdin()
    wire = _claim_stdout()
    to_server, from_stdin = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_stdout, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    write_lock = anyio.Lock()

    async def write(data: bytes) -> None:
        async with write_lock:
            # A blocking write of one line: stdout is a pipe the client drains.
            wire.write(data)

    async def pump_in() -> None:
        async with to_server:
            async for line in _read_lines(reader):
                if isinstance(line, MessageError):
                    await write(_error_line(line))
                    continue
                try:
                    message = parse_message(line)
                except MessageError as error:
                    await write(_error_line(error))
                    continue
                await to_server.send(SessionMessage(message))

    async def pump_out() -> None:
        async with from_server:
            async for item in from_server:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await write(data.encode("utf-8") + b"\n")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pump_in)
        tasks.start_soon(pump_out)
        try:
            yield from_stdin, to_stdout
        finally:
            tasks.cancel_scope.cancel()


async def run_stdio(server: Server[AppState]) -> None:
    """Serve one client over stdin/stdout until stdin closes."""
    async with guarded_stdio() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, initialization_options(server))
