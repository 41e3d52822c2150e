"""Transports: serve the MCP server over stdio.

graphmem has its own stdio transport instead of the SDK's `stdio_server()`,
because that one stays silent on some messages it cannot use (a lone surrogate,
JSON nested a few hundred levels deep) and replaces invalid UTF-8 instead of
rejecting it; a client then waits for an answer that never comes. Here every line
that is not a usable JSON-RPC message gets a JSON-RPC error at once (with the
request's id when it can be found), and the connection stays up. Reading is done
with asyncio's pipe reader instead of a thread hop per line, which also makes
each call cheaper.

    stdin ─► _read_lines ─► parse_message ─┬─► Server.run ─► pump_out ─► stdout
                                           └─► (error line) ─────────────┘

When stdin closes, the requests already read are still answered (within
`DRAIN_SECONDS`) before the server stops: a client that writes its requests and
closes the pipe (`printf … | graphmem`) gets every answer, where the SDK alone
would cancel them all with "Connection closed". When stdout closes, nobody can
read an answer any more, so the server stops quietly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO, Protocol

import anyio
import anyio.to_thread
import mcp_types as types
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel.server import Server
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

from graphmem.server import AppState, initialization_options

__all__ = [
    "DRAIN_SECONDS",
    "MAX_JSON_DEPTH",
    "MAX_MESSAGE_BYTES",
    "MessageError",
    "event_loop_options",
    "parse_message",
    "run_stdio",
]

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest line accepted; longer ones are answered with an error and skipped."""

MAX_JSON_DEPTH = 64
"""The deepest nesting accepted; no MCP message needs more than a handful of levels."""

DRAIN_SECONDS = 30.0
"""How long requests still in flight when stdin closes may take to be answered."""

_CHUNK = 1 << 16
_ID_PATTERN = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
# An escaped high surrogate not followed by an escaped low one, or a low one without a
# high one before it (one whose backslash is not itself escaped). A match may be a false
# alarm (`\\ud800` is a backslash and text), so it only triggers the exact test; valid
# pairs, as a client that escapes all non-ASCII sends every emoji, never match.
_LONE_SURROGATE_ESCAPE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!(?<!\\)\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SQUARE = bytes.maketrans(b"{}", b"[]")
_JSON_KINDS = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# json.loads(text, **options) would build a new decoder for every line.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


class MessageError(Exception):
    """A line that cannot be served, with the JSON-RPC error to answer it with.

    Attributes:
        code: the JSON-RPC error code.
        message: what was wrong and what to do instead.
        request_id: the id of the request, when it could be read.
        batch_ids: for a JSON-RPC batch, the ids of the requests in it; each gets the error.
    """

    def __init__(
        self, code: int, message: str, request_id: Any = None, *, batch_ids: tuple[Any, ...] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.batch_ids = batch_ids


def _guess_id(raw: bytes) -> Any:
    """The request id of a line that could not be parsed, if it can be seen in its first bytes."""
    match = _ID_PATTERN.search(raw[:4096])
    if match is None:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None


def _too_deep(raw: bytes) -> bool:
    """Whether the JSON in `raw` nests deeper than `MAX_JSON_DEPTH`.

    Everything here runs in C over the bytes: drop escaped backslashes and quotes,
    drop the strings (the odd pieces between quotes), keep only the brackets, then
    peel one level of innermost `[]` pairs per pass. A structure of depth d vanishes
    after d passes, so whatever is left after MAX_JSON_DEPTH passes is too deep, and a
    usual message (depth 6 or so) takes six passes over a string much shorter than
    the line.
    """
    plain = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(plain.split(b'"')[::2]).translate(_SQUARE, _NOT_BRACKETS)
    for _ in range(MAX_JSON_DEPTH):
        if not brackets:
            return False
        peeled = brackets.replace(b"[]", b"")
        if len(peeled) == len(brackets):
            # Unbalanced: not JSON at all, and the parser says so better.
            return False
        brackets = peeled
    return bool(brackets)


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _batch_error(value: list[Any]) -> MessageError:
    ids = tuple(
        item["id"]
        for item in value
        if isinstance(item, dict) and "method" in item and _is_id(item.get("id"), valid_in_mcp=True)
    )
    return MessageError(
        types.INVALID_REQUEST,
        "Invalid request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); "
        "send each message on its own line.",
        batch_ids=ids or None,
    )


def _is_id(value: Any, *, valid_in_mcp: bool = False) -> bool:
    """Whether `value` can be a JSON-RPC id: a string or a number (MCP: a string or an integer)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, (str, int)) or (not valid_in_mcp and isinstance(value, float))


def parse_message(raw: bytes) -> types.JSONRPCMessage:
    """Turn one line into a JSON-RPC message, or raise `MessageError` saying why not.

    Raises:
        MessageError: the line is not UTF-8, not JSON, nested too deep, holds a lone
            surrogate, is a batch, or is not a JSON-RPC 2.0 message MCP can serve.
    """
    if raw.startswith(b"\xef\xbb\xbf"):
        # A byte-order mark, as some Windows tools write before the first line.
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError(
            types.PARSE_ERROR,
            f"Parse error: the message is not valid UTF-8 ({exc.reason} at byte {exc.start}); send UTF-8 text.",
            _guess_id(raw),
        ) from None
    # Cheap first: a line with fewer brackets than the limit cannot nest deeper than it.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and _too_deep(raw):
        raise MessageError(
            types.INVALID_REQUEST,
            f"Invalid request: JSON nested deeper than {MAX_JSON_DEPTH} levels; flatten the arguments.",
            _guess_id(raw),
        )
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        # Only reached if the depth test above was fooled by invalid JSON.
        raise MessageError(
            types.INVALID_REQUEST,
            f"Invalid request: JSON nested deeper than {MAX_JSON_DEPTH} levels; flatten the arguments.",
            _guess_id(raw),
        ) from None
    except ValueError as exc:
        raise MessageError(
            types.PARSE_ERROR, f"Parse error: the message is not valid JSON ({exc}).", _guess_id(raw)
        ) from None
    if not isinstance(value, dict):
        if isinstance(value, list):
            raise _batch_error(value)
        kind = _JSON_KINDS.get(type(value), "a value")
        raise MessageError(types.INVALID_REQUEST, f"Invalid request: a message must be a JSON object, not {kind}.")
    request_id = value.get("id")
    if _LONE_SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise MessageError(
            types.INVALID_PARAMS,
            "Invalid params: the message contains an unpaired UTF-16 surrogate escape (such as \\ud800), "
            "which is not valid text; send well-formed Unicode.",
            request_id,
        )
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError as exc:
        first = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise MessageError(
            types.INVALID_REQUEST, f"Invalid request: not a JSON-RPC 2.0 message ({first}).", request_id
        ) from None
    if isinstance(message, types.JSONRPCNotification) and "id" in value:
        # A request whose id is null, a fraction, a boolean or an object validates as a
        # notification, which is never answered: the client would wait for ever.
        raise MessageError(
            types.INVALID_REQUEST,
            f"Invalid request: the id must be a string or an integer, not {json.dumps(request_id)[:40]}.",
            request_id,
        )
    return message


def _wire_id(value: Any) -> Any:
    """The id to echo in an error: the client's own if it is a usable id, else null."""
    if not _is_id(value) or (isinstance(value, str) and _SURROGATE.search(value)):
        return None
    return value


def _error_line(error: MessageError) -> bytes:
    def answer(request_id: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": _wire_id(request_id), "error": {"code": error.code, "message": error.message}}

    body: Any = [answer(i) for i in error.batch_ids] if error.batch_ids else answer(error.request_id)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _encode(message: types.JSONRPCMessage) -> bytes:
    """One message as a line of UTF-8 JSON.

    Pydantic writes the bytes directly; only a message it cannot write (a lone
    surrogate read from a memory file) takes the slow path, where each surrogate
    becomes U+FFFD so that every client can read the answer.
    """
    try:
        if isinstance(message, types.JSONRPCResponse):
            # The answer to a request, already shaped for the wire by the SDK (a dict of
            # JSON values): orjson writes it about twice as fast as pydantic walking it
            # again, which counts for the large answers of read tools.
            return orjson.dumps({"jsonrpc": "2.0", "id": message.id, "result": message.result}) + b"\n"
        return message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True) + b"\n"
    except (PydanticSerializationError, orjson.JSONEncodeError):
        data = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return _SURROGATE.sub("\ufffd", text).encode("utf-8") + b"\n"


class _Reader(Protocol):
    async def read(self, n: int) -> bytes: ...


class _FileReader:
    """Reads a stdin that is not a pipe (`graphmem < requests.jsonl`) on a thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self._fd, n)


def _is_blank(line: bytes | bytearray) -> bool:
    # isspace() stops at the first other byte; strip() would copy the whole line.
    return not line or line.isspace()


async def _read_lines(reader: _Reader) -> AsyncIterator[bytes | MessageError]:
    """Yield each line of the stream; a line over the size limit yields an error instead."""
    buffer = bytearray()
    discarding = False
    head = b""

    def too_long() -> MessageError:
        return MessageError(
            types.INVALID_REQUEST,
            f"Invalid request: the message is over {MAX_MESSAGE_BYTES // (1024 * 1024)} MB; send less per call.",
            _guess_id(head),
        )

    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            if discarding:
                yield too_long()
            elif not _is_blank(buffer):
                yield bytes(buffer)
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            if discarding:
                pass
            elif newline >= 0 and not buffer:
                # The usual case, a whole line inside one chunk: no copy into the buffer.
                line = chunk[start:end]
                if not _is_blank(line):
                    yield line
            else:
                buffer += chunk[start:end]
                if len(buffer) > MAX_MESSAGE_BYTES:
                    head = bytes(buffer[:4096])
                    buffer.clear()
                    discarding = True
                elif newline >= 0:
                    if not _is_blank(buffer):
                        yield bytes(buffer)
                    buffer.clear()
            if newline < 0:
                break
            start = newline + 1
            if discarding:
                discarding = False
                yield too_long()


async def _open_stdin() -> _Reader:
    mode = os.fstat(sys.stdin.fileno()).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        # What an MCP client hands over is a pipe or a socket. Anything else (a file,
        # /dev/null, a terminal) is read on a thread: asyncio refuses a regular file,
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


class _InFlight:
    """The requests passed to the server that have not been answered yet, by id."""

    def __init__(self) -> None:
        self._count: dict[Any, int] = {}
        self._idle = anyio.Event()
        self._idle.set()

    def add(self, request_id: Any) -> None:
        # Counted, not a set: a client may reuse an id, and each request gets an answer.
        self._count[request_id] = self._count.get(request_id, 0) + 1
        if self._idle.is_set():
            self._idle = anyio.Event()

    def settle(self, request_id: Any) -> None:
        left = self._count.get(request_id, 0) - 1
        if left > 0:
            self._count[request_id] = left
            return
        self._count.pop(request_id, None)
        if not self._count:
            self._idle.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()


def _track(message: types.JSONRPCMessage, in_flight: _InFlight) -> None:
    """Note a request coming in, or a cancellation that means it will never be answered."""
    if isinstance(message, types.JSONRPCRequest):
        in_flight.add(message.id)
    elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
        request_id = (message.params or {}).get("requestId")
        if _is_id(request_id):
            in_flight.settle(request_id)


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Streams for `Server.run` over this process's stdin and stdout."""
    reader = await _open_stdin()
    wire = _claim_stdout()
    to_server, from_stdin = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_stdout, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    in_flight = _InFlight()
    reading = anyio.CancelScope()
    client_gone = False

    def write(data: bytes) -> None:
        # A blocking write of whole lines: stdout is a pipe the client drains, and reading
        # ahead on stdin (asyncio buffers it) keeps a pipelining client from deadlocking.
        nonlocal client_gone
        if client_gone:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[wire.write(view) or 0 :]
        except BrokenPipeError:
            # Nobody reads the answers any more: stop reading requests, so the server ends.
            client_gone = True
            reading.cancel()

    async def pump_in() -> None:
        async with to_server:
            with reading:
                async for line in _read_lines(reader):
                    if isinstance(line, MessageError):
                        write(_error_line(line))
                        continue
                    try:
                        message = parse_message(line)
                    except MessageError as error:
                        logger.debug("answered a bad message with an error: %s", error.message)
                        write(_error_line(error))
                        continue
                    _track(message, in_flight)
                    await to_server.send(SessionMessage(message))
                # EOF. Closing the server's stream now would cancel the requests in flight.
                with anyio.move_on_after(DRAIN_SECONDS):
                    await in_flight.wait_idle()

    async def pump_out() -> None:
        async with from_server:
            async for item in from_server:
                message = item.message
                write(_encode(message))
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    in_flight.settle(message.id)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pump_in)
        tasks.start_soon(pump_out)
        try:
            yield from_stdin, to_stdout
        finally:
            tasks.cancel_scope.cancel()


async def _serve_stdio(server: Server[AppState]) -> None:
    async with guarded_stdio() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, initialization_options(server))


def event_loop_options() -> dict[str, Any]:
    """anyio backend options: uvloop where it is installed.

    A call's round trip is mostly event-loop turns (the SDK hands each message
    through several tasks and streams); uvloop makes each turn cheaper, which takes
    about a fifth off a ping. Without it (Windows) the standard loop serves the same.
    """
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def run_stdio(server: Server[AppState]) -> None:
    """Serve one client over stdin/stdout until stdin closes and every request read is answered."""
    anyio.run(_serve_stdio, server, backend_options=event_loop_options())
