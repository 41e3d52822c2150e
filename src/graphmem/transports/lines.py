"""The line protocol: one JSON-RPC message per line, every unusable line answered with an error.

Shared by the stdio and TCP transports. `read_lines` splits a byte stream into lines
(a line over `MAX_MESSAGE_BYTES` becomes an error, not a crash); `parse_message` turns
a line into a message or a `MessageError` naming what was wrong; `error_line` and
`encode_message` write the answers; `InFlight` counts the requests not answered yet,
so a transport can answer them before it closes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio
import mcp_types as types
import orjson
from pydantic_core import PydanticSerializationError

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_MESSAGE_BYTES",
    "InFlight",
    "LineReader",
    "MessageError",
    "encode_message",
    "error_line",
    "parse_message",
    "read_lines",
    "track",
]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest line accepted; longer ones are answered with an error and skipped."""

MAX_JSON_DEPTH = 64
"""The deepest nesting accepted; no MCP message needs more than a handful of levels."""

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
        data: the error's `data`, for codes that define one (-32022: the versions supported).
        request_id: the id of the request, when it could be read.
        batch_ids: for a JSON-RPC batch, the ids of the requests in it; each gets the error.
    """

    def __init__(
        self,
        code: int,
        message: str,
        request_id: Any = None,
        *,
        batch_ids: tuple[Any, ...] | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.batch_ids = batch_ids
        self.data = data


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
        # No id, even one that can be seen: JSON-RPC answers a parse error with a null id.
        raise MessageError(types.PARSE_ERROR, f"Parse error: the message is not valid JSON ({exc}).") from None
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
            f"Invalid request: the id must be a string or an integer, not {_shown(request_id)}.",
            request_id,
        )
    return message


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        # 1e400 parses as infinity, which JSON cannot write back.
        return "a number beyond the range of JSON numbers"
    return json.dumps(value)[:40]


def _wire_id(value: Any) -> Any:
    """The id to echo in an error: the client's own if it is a usable id, else null."""
    if not _is_id(value) or (isinstance(value, str) and _SURROGATE.search(value)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def error_line(error: MessageError) -> bytes:
    described: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        described["data"] = error.data

    def answer(request_id: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": _wire_id(request_id), "error": described}

    body: Any = [answer(i) for i in error.batch_ids] if error.batch_ids else answer(error.request_id)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def encode_message(message: types.JSONRPCMessage) -> bytes:
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


class LineReader(Protocol):
    """Anything that reads bytes: asyncio's StreamReader, a socket, a file on a thread."""

    async def read(self, n: int) -> bytes: ...


def _is_blank(line: bytes | bytearray) -> bool:
    # isspace() stops at the first other byte; strip() would copy the whole line.
    return not line or line.isspace()


async def read_lines(reader: LineReader) -> AsyncIterator[bytes | MessageError]:
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


class InFlight:
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


def track(message: types.JSONRPCMessage, in_flight: InFlight) -> None:
    """Note a request coming in, or a cancellation that means it will never be answered."""
    if isinstance(message, types.JSONRPCRequest):
        in_flight.add(message.id)
    elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
        request_id = (message.params or {}).get("requestId")
        if _is_id(request_id):
            in_flight.settle(request_id)
