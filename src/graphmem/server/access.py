"""Who is calling, as the transport found out, and what a read-only token may not do.

The transport that checked the token puts the caller's `Identity` where the MCP SDK
hands it to every handler, `ctx.request`:

    HTTP  RequestGuard ─► scope[IDENTITY_KEY] ─► the Starlette request the SDK passes on ─┐
    TCP   graphmem/authenticate ─► the Identity itself, on every message of the connection ─┴─► identity_of(ctx.request)

Over stdio, and on a server with no token, there is no identity: the caller may do
everything and its changes record no author.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphmem.core.identity import Identity

__all__ = ["IDENTITY_KEY", "PROJECT_HEADER", "PROJECT_KEY", "identity_of", "project_header_of", "read_only_refusal"]

PROJECT_HEADER = "x-graphmem-project"
"""The HTTP header a client names the project of its requests with (one server, many projects)."""

PROJECT_KEY = "graphmem.project"
"""The ASGI scope key under which the HTTP front leaves the project a request's URL names."""

IDENTITY_KEY = "graphmem.identity"
"""The ASGI scope key under which the HTTP guard leaves the caller's identity."""


def identity_of(request: Any) -> Identity | None:
    """The identity of whoever sent the request `ctx.request` stands for, if a token told it.

    Args:
        request: what the transport attached to the message: a Starlette request (HTTP,
            itself a mapping over its ASGI scope), an `Identity` (TCP), or None (stdio).
    """
    if isinstance(request, Identity):
        return request
    if isinstance(request, Mapping):
        found = request.get(IDENTITY_KEY)
        return found if isinstance(found, Identity) else None
    return None


def read_only_refusal(identity: Identity | None, tool: str, read_only: bool) -> str | None:
    """The error for a read-only token calling a tool that writes, or None when the call may run."""
    if read_only or identity is None or identity.can_write:
        return None
    whose = f" ({identity.name})" if identity.name else ""
    return (
        f"This token{whose} may only read: {tool} changes the memory, so nothing was changed. "
        "Ask the server's operator for a write token, or use the tools that read."
    )


def project_header_of(request: Any) -> str | None:
    """The project an HTTP request names in its URL (`/mcp/projects/NAME`) or its
    `X-Graphmem-Project` header; None without one (and over stdio and TCP, whose server has one
    project, or the token's)."""
    if isinstance(request, Mapping) and isinstance(request.get(PROJECT_KEY), str):
        return str(request.get(PROJECT_KEY)).strip() or None
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get(PROJECT_HEADER)
    return value.strip() or None if isinstance(value, str) else None
