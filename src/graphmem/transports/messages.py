"""The HTTP transport's check of each POSTed message, by the rules stdio and TCP apply to a line.

The SDK's HTTP transport takes what pydantic takes: an id of `1e400` parses as
infinity, is no valid id, and the request passes as a notification (202, never
answered); an unknown `MCP-Protocol-Version` header sends the request down the
stateless protocol's path, whose refusal talks about `params._meta`. Here each POST
to /mcp is read first and refused with one JSON-RPC error (400) saying what was
wrong, exactly as `lines.parse_message` words it for a line; a good body is handed
on unchanged.
"""

from __future__ import annotations

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem.transports.lines import MessageError, error_line, parse_message

__all__ = ["MessageCheck"]

_KNOWN_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


class MessageCheck:
    """ASGI middleware: a POST's protocol-version header and JSON-RPC body are checked before MCP sees them.

    Args:
        app: the app that serves MCP.
        max_body_bytes: a body longer than this is handed on unread, for the app to refuse (413).
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        version = Headers(scope=scope).get("mcp-protocol-version")
        if version is not None and version not in _KNOWN_VERSIONS:
            await _refuse(
                send,
                MessageError(
                    -32600,
                    f"Invalid request: unsupported MCP-Protocol-Version header {version[:40]!r}; this server "
                    f"speaks {', '.join(_KNOWN_VERSIONS)}. Send the version initialize agreed on, or no header.",
                ),
            )
            return
        body, messages = await _read_body(receive, self.max_body_bytes)
        if body is not None:
            try:
                parse_message(body)
            except MessageError as error:
                await _refuse(send, error)
                return
        await self.app(scope, _replay(messages, receive), send)


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, list[Message]]:
    """The whole body (None when it grew past `limit` or the client left), and the messages read."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, messages
        size += len(message.get("body", b""))
        if size > limit:
            return None, messages
        if not message.get("more_body", False):
            return b"".join(part.get("body", b"") for part in messages), messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives the messages already read again, then reads on."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def _refuse(send: Send, error: MessageError) -> None:
    body = error_line(error).rstrip(b"\n")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
