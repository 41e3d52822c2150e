"""What a TCP connection must send first, and what it may never send: the defence against web pages.

A browser will not read the answers of a port that does not speak HTTP, but it will
send to it: a page the user opens can `fetch("http://127.0.0.1:8766/", {method: "POST",
mode: "no-cors", body: ...})` with a text/plain body, and the TCP server then reads

    POST / HTTP/1.1                       ◄─ request line
    Host: 127.0.0.1:8766                  ◄─ headers
    Origin: https://evil.example
    (blank line)
    {"jsonrpc":"2.0","id":0,"method":"initialize",...}      ◄─ the page's body: JSON-RPC lines
    {"jsonrpc":"2.0","id":1,"method":"tools/call",...}

A line server that answers each unusable line with an error and reads on would run
that body. So a connection is refused (one error line with id null, then closed)
when its first line does not open MCP (after `graphmem/authenticate` with a token):
`initialize`, or from protocol 2026-07-28 on `server/discover` or any request carrying
its protocol version in `params._meta`; or when any later line looks like HTTP: a request
line or a header line. No JSON-RPC line can look like either, since JSON never starts with a letter followed by a colon
or a space. A browser cannot make its request start with anything but the request line.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import anyio
import mcp_types as types
from mcp_types import PROTOCOL_VERSION_META_KEY

from graphmem.transports.channel import LineWriter
from graphmem.transports.lines import MessageError, error_line, parse_message

__all__ = ["first_line_opens_mcp", "looks_like_http", "refuse", "refuse_http_lines"]

# `METHOD target HTTP/x.y` (RFC 9112 §3), and `field-name: value` with a token as the name (RFC 9110 §5.1).
_REQUEST_LINE = re.compile(rb"^[A-Z]{3,16} \S+ HTTP/\d(?:\.\d)?\s*$")
_HEADER_LINE = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:")

HTTP_REFUSAL = (
    "Refused: this is graphmem's TCP port, which speaks newline-delimited JSON-RPC, and the connection "
    "sent an HTTP request line or header. Nothing it sent was run. Use `graphmem serve --http` for HTTP clients."
)


def looks_like_http(line: bytes) -> bool:
    """Whether `line` is an HTTP request line or header line (never a JSON-RPC message)."""
    line = line.lstrip()
    return bool(_REQUEST_LINE.match(line) or _HEADER_LINE.match(line))


def refuse(message: str) -> bytes:
    """The one error line (id null) a refused connection gets before it is closed."""
    return error_line(MessageError(types.INVALID_REQUEST, message))


def _opens_mcp(message: types.JSONRPCRequest) -> bool:
    if message.method in ("initialize", "server/discover"):
        return True
    # Protocol 2026-07-28 has no handshake: every request says its revision in its envelope.
    meta = (message.params or {}).get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def first_line_opens_mcp(line: bytes | MessageError | None) -> str | None:
    """Why `line` cannot open an MCP connection, or None when it can: `initialize`, or a request of
    protocol 2026-07-28 on (`server/discover`, or one with the protocol version in its `_meta`)."""
    how = 'Send {"jsonrpc":"2.0","id":1,"method":"initialize","params":{...}} as the first message.'
    if line is None:
        return f"Refused: no message arrived in time. {how}"
    if isinstance(line, MessageError):
        return f"Refused: the first message was too long. {how}"
    if looks_like_http(line):
        return HTTP_REFUSAL
    try:
        message = parse_message(line)
    except MessageError as error:
        return f"Refused: the first message is not JSON-RPC ({error.message}). {how}"
    if not isinstance(message, types.JSONRPCRequest) or not _opens_mcp(message):
        what = getattr(message, "method", None) or "not a request"
        return f"Refused: the first message must be initialize, not {what}; nothing was run. {how}"
    return None


async def refuse_http_lines(
    lines: AsyncIterator[bytes | MessageError], write: LineWriter
) -> AsyncIterator[bytes | MessageError]:
    """The lines of an opened connection, ending (after the refusal line) at the first that looks like HTTP."""
    async for line in lines:
        if isinstance(line, bytes) and looks_like_http(line):
            # The lines after it are an HTTP body: none of them is read.
            with anyio.CancelScope(shield=True):
                await write(refuse(HTTP_REFUSAL))
            return
        yield line
