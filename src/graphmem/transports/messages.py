"""The HTTP transport's check of each POSTed message, by the rules stdio and TCP apply to a line.

The SDK's HTTP transport takes what pydantic takes: an id of `1e400` parses as
infinity, is no valid id, and the request passes as a notification (202, never
answered); an unknown `MCP-Protocol-Version` header sends the request down the
stateless protocol's path, whose refusal talks about `params._meta`; and params that
do not fit their method (`arguments` a string) are refused inside a 200 answer. Here
each POST to /mcp is read first and refused with one JSON-RPC error saying what was
wrong: 415 for a body that is not declared JSON, 400 for the rest, worded as
`lines.parse_message` words a bad line, and an unknown protocol version as protocol
2026-07-28 asks (-32022, with the versions supported and the request's id). A good
body is handed on unchanged.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem.server.request_errors import invalid_params_message
from graphmem.transports.lines import MessageError, error_line, parse_message

__all__ = ["MessageCheck"]

_KNOWN_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)

_PARAMS: dict[str, type[BaseModel]] = {
    "tools/call": types.CallToolRequestParams,
    "resources/read": types.ReadResourceRequestParams,
    "resources/subscribe": types.SubscribeRequestParams,
    "resources/unsubscribe": types.UnsubscribeRequestParams,
    "prompts/get": types.GetPromptRequestParams,
    "logging/setLevel": types.SetLevelRequestParams,
    "subscriptions/listen": types.SubscriptionsListenRequestParams,
}
"""The params of the methods that carry a client's own values, checked as the server would check them."""


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
        headers = Headers(scope=scope)
        if not _declares_json(headers.get("content-type", "")):
            shown = headers.get("content-type", "none")[:60]
            error = MessageError(
                types.INVALID_REQUEST,
                f"Unsupported Media Type: the body was sent as {shown!r}; send the JSON-RPC message with "
                "Content-Type: application/json.",
            )
            await _refuse(send, error, status=415)
            return
        body, messages = await _read_body(receive, self.max_body_bytes)
        if body is not None:
            try:
                message = parse_message(body)
                _check_version(headers.get("mcp-protocol-version"), message)
                _check_params(message)
            except MessageError as error:
                await _refuse(send, error)
                return
        await self.app(scope, _replay(messages, receive), send)


def _declares_json(content_type: str) -> bool:
    """Whether a Content-Type header says the body is JSON (`application/json`, with or without parameters)."""
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def _request_id(message: types.JSONRPCMessage) -> Any:
    return message.id if isinstance(message, types.JSONRPCRequest) else None


def _check_version(version: str | None, message: types.JSONRPCMessage) -> None:
    """Refuse a `MCP-Protocol-Version` header this server does not speak, as protocol 2026-07-28 words it."""
    if version is None or version in _KNOWN_VERSIONS:
        return
    raise MessageError(
        types.UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {version[:40]!r} in the MCP-Protocol-Version header; this server speaks "
        f"{', '.join(_KNOWN_VERSIONS)}. Send one of them (the one initialize agreed on, or 2026-07-28).",
        _request_id(message),
        data={"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": version[:40]},
    )


def _check_params(message: types.JSONRPCMessage) -> None:
    """Refuse a request whose params do not fit its method, in the words the server would use."""
    if not isinstance(message, types.JSONRPCRequest) or message.method not in _PARAMS:
        return
    try:
        _PARAMS[message.method].model_validate(message.params if message.params is not None else {})
    except ValidationError as error:
        raise MessageError(
            types.INVALID_PARAMS, invalid_params_message(message.method, message.params, error), message.id
        ) from None


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


async def _refuse(send: Send, error: MessageError, *, status: int = 400) -> None:
    body = error_line(error).rstrip(b"\n")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
