"""Who may talk to the HTTP server: Host and Origin checks against DNS rebinding, and the bearer token.

Every request passes through `RequestGuard` before it reaches MCP, whatever address
the server is bound to (the SDK checks Host and Origin only when it serves loopback
itself, and graphmem wants the same rules everywhere):

    Host not allowed      421  a DNS-rebinding page names the server by a name of its own
    Origin not allowed    403  a web page the user opened is not one of ours
    token missing/wrong   401  (with `WWW-Authenticate: Bearer`), on every path but /health

A request that passes with a token carries the token's `Identity` (its name and whether
it may write) in its ASGI scope under `IDENTITY_KEY`; the MCP SDK hands the request to
the handlers, which read it there (`server/access.py`).

A Host is allowed when its name (the port does not matter) is loopback, the address
the server is bound to, this machine's name when it is bound to every address, or one
given with --allowed-host. An Origin is allowed only when it is a page this server
served itself, or exactly one given with --allowed-origin. A page of this server has
the request's own origin (its scheme and Host header, as a tunnel or proxy that keeps
the Host shows it), or an allowed host name with the port the server is bound to
(read from the connection, so it holds for port 0 too). Any other page, a loopback one
on another port included (a dev server, another local app), is refused: it is another
origin, and a browser sends its requests with the user's cookies and network position.
A request with no Origin (any client that is not a browser) passes that check.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from graphmem.config import Credential, Identity
from graphmem.server.access import IDENTITY_KEY

__all__ = ["OPEN_PATHS", "RequestGuard", "allowed_host_names", "host_name", "identify"]

logger = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/health"})
"""Paths served without the token: they tell nothing about the memory (the explorer adds its page's files)."""

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARDS = ("", "0.0.0.0", "::")


def host_name(value: str) -> str:
    """The host part of a Host header or URL authority, lower case, without port or IPv6 brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    name, _, port = value.rpartition(":")
    if name and port.isdigit():
        return name
    return value


def allowed_host_names(bind_host: str, extra: Iterable[str]) -> frozenset[str]:
    """The host names clients may use to reach a server bound to `bind_host`."""
    names = {*_LOOPBACK_NAMES, *(host_name(name) for name in extra)}
    bind = host_name(bind_host)
    if bind in _WILDCARDS:
        # Bound to every address: this machine's own names are the ones others will use.
        names.update({socket.gethostname().lower(), socket.getfqdn().lower()})
    else:
        names.add(bind)
    return frozenset(name for name in names if name)


def identify(presented: str, credentials: Iterable[Credential]) -> Identity | None:
    """The identity of the configured token equal to `presented`, or None when none is.

    Every configured token is compared, in constant time, whether or not an earlier one
    matched: the time to answer then tells an attacker neither how much of a guess was
    right nor which token it resembled.
    """
    candidate = presented.encode("utf-8")
    found: Identity | None = None
    for credential in credentials:
        if hmac.compare_digest(candidate, credential.token.encode("utf-8")):
            found = credential.identity
    return found


def _port(value: str | None, scheme: str) -> int | None:
    """The port of a Host header or URL authority, or the scheme's default when it names none."""
    if value:
        value = value.strip()
        tail = value[value.rfind("]") + 1 :] if value.startswith("[") else value
        _, colon, port = tail.rpartition(":")
        if colon:
            return int(port) if port.isdigit() else None
    return {"http": 80, "https": 443}.get(scheme)


def _is_loopback_name(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _refusal(
    status: int, message: str, headers: dict[str, str] | None = None, *, path: str = ""
) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    # MCP clients read a JSON-RPC error; the explorer's page reads its routes' own shape.
    wire = (
        {"error": message}
        if path.startswith("/api/")
        else {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    )
    body = json.dumps(wire).encode("utf-8")
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    raw_headers += [(key.encode("latin-1"), value.encode("latin-1")) for key, value in (headers or {}).items()]
    return status, body, raw_headers


class RequestGuard:
    """ASGI middleware that refuses requests with a foreign Host or Origin, or without the token."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: frozenset[str],
        allowed_origins: Iterable[str] = (),
        credentials: Sequence[Credential] = (),
        open_paths: frozenset[str] = OPEN_PATHS,
    ) -> None:
        self.app = app
        self._open_paths = open_paths
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = frozenset(origin.rstrip("/").lower() for origin in allowed_origins)
        self._credentials = tuple(credentials)

    def _host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        name = host_name(host)
        return name in self.allowed_hosts or _is_loopback_name(name)

    def _origin_allowed(self, origin: str, scope: Scope, host: str) -> bool:
        origin = origin.rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            # Includes "null", which sandboxed frames and file:// pages send.
            return False
        try:
            port = parts.port or _port(None, parts.scheme)
        except ValueError:
            return False
        # The scheme this request came by (https behind a proxy that says so with
        # X-Forwarded-Proto, which uvicorn reads); a page of ours has the same.
        scheme = scope.get("scheme", "http")
        if parts.scheme != scheme:
            return False
        # The page came from where this request is going: a same-origin request.
        if parts.hostname == host_name(host) and port == _port(host, scheme):
            return True
        # A page this server served under another of its names (localhost and 127.0.0.1).
        server = scope.get("server")
        bound_port = server[1] if server else None
        name = parts.hostname
        return port == bound_port and (name in self.allowed_hosts or _is_loopback_name(name))

    def _identity(self, authorization: str | None) -> Identity | None:
        scheme, _, presented = (authorization or "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return identify(presented.strip(), self._credentials)

    def check(self, scope: Scope) -> tuple[int, bytes, list[tuple[bytes, bytes]]] | None:
        """The refusal for this request (status, body, headers), or None when it may pass.

        A request that passes with a token gets the token's identity in `scope[IDENTITY_KEY]`.
        """
        headers = Headers(scope=scope)
        path = scope.get("path", "")
        host = headers.get("host")
        if not self._host_allowed(host):
            logger.warning("refused a request with Host %r", host)
            return _refusal(
                421,
                f"Invalid Host header {host!r}: this server does not answer to that name. "
                "Start it with --allowed-host NAME to allow it.",
                path=path,
            )
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, scope, host or ""):
            logger.warning("refused a request with Origin %r", origin)
            return _refusal(
                403,
                f"Invalid Origin header {origin!r}: requests from that web page are not allowed. "
                f"If it is this server's page behind a proxy, start the server with --allowed-origin {origin[:200]}.",
                path=path,
            )
        if self._credentials and path not in self._open_paths:
            identity = self._identity(headers.get("authorization"))
            if identity is None:
                return _refusal(
                    401,
                    "Unauthorized: send the server's token as `Authorization: Bearer TOKEN`.",
                    {"www-authenticate": 'Bearer realm="graphmem"'},
                    path=path,
                )
            # The same dict travels down to the request the SDK hands the MCP handlers.
            scope[IDENTITY_KEY] = identity
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, body, headers = refusal
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
