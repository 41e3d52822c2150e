"""The Streamable HTTP transport: many MCP clients at once on `/mcp`, a health check on `/health`,
and the explorer (a page in the browser) at `/`.

    uvicorn (request deadline) ─► RequestGuard (Host, Origin, token) ─┬─► /mcp     MessageCheck ─► sessions ─► Server
                                                                      ├─► /health  {"status": "ok", ...}
                                                                      └─► /, /explorer/, /api/  the explorer

The SDK's `StreamableHTTPSessionManager` keeps the sessions (an `Mcp-Session-Id` per
client, ended by DELETE or after `network.session_timeout` seconds unused) and
enters the server's lifespan once for all of them, so every session shares one store
and its one-call-at-a-time worker. Bodies over `MAX_BODY_BYTES` get 413 before they
are parsed.

Nothing idle holds a place for long: a request must arrive whole within
`network.request_timeout` seconds of the connection opening (`deadline.py`), a
kept-alive connection is closed after `KEEP_ALIVE_SECONDS` without a new request,
and a full session table ends its least recently used idle session for a newcomer
(`sessions.py`).

On SIGINT or SIGTERM the server stops accepting connections, ends the open GET
streams (they never finish by themselves), lets the calls in flight finish within
`DRAIN_SECONDS`, and only then closes the store.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator

import anyio
import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem._version import __version__
from graphmem.config import NetworkSettings
from graphmem.explorer import Explorer
from graphmem.server import AppState, end_listen_streams
from graphmem.server.access import PROJECT_KEY
from graphmem.transports.channel import DRAIN_SECONDS
from graphmem.transports.deadline import with_request_deadline
from graphmem.transports.guard import OPEN_PATHS, RequestGuard, allowed_host_names
from graphmem.transports.loop import STOP_SIGNALS, event_loop_options
from graphmem.transports.messages import MessageCheck
from graphmem.transports.sessions import RecyclingSessionManager

__all__ = ["KEEP_ALIVE_SECONDS", "MAX_BODY_BYTES", "build_http_app", "run_http"]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"

MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body; tool calls that need more should be split (batches are limited anyway)."""

KEEP_ALIVE_SECONDS = 5
"""A kept-alive connection with no new request for this long is closed (uvicorn's default, made explicit)."""


class _OpenStreams:
    """The GET streams open now, so shutdown can end them: they only end when the client goes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._scopes: set[anyio.CancelScope] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def watched_send(message: Message) -> None:
            nonlocal started, finished
            started = started or message["type"] == "http.response.start"
            finished = finished or (message["type"] == "http.response.body" and not message.get("more_body"))
            await send(message)

        with anyio.CancelScope() as cancel:
            self._scopes.add(cancel)
            try:
                await self.app(scope, receive, watched_send)
            finally:
                self._scopes.discard(cancel)
        if cancel.cancelled_caught and started and not finished:
            # End the stream as a finished response, so the client reads a clean end.
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def close_all(self) -> None:
        """End every open GET stream (its client sees the stream close, as at any disconnect)."""
        for cancel in list(self._scopes):
            cancel.cancel()


def build_http_app(server: Server[AppState], network: NetworkSettings) -> tuple[ASGIApp, Callable[[], None]]:
    """The ASGI app serving `server` at /mcp and a health check at /health, behind the guard.

    Returns:
        The app, and a function that ends the open GET and listen streams (call it when shutting down).
    """
    sessions = RecyclingSessionManager(
        app=server,
        json_response=network.json_response,
        # Host and Origin are checked by RequestGuard for every path and bind address;
        # the SDK still checks the Content-Type of POSTs.
        security_settings=None,
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=network.session_timeout,
        max_sessions=network.max_sessions,
    )

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": "graphmem", "version": __version__})

    # Reads the page's files once; its routes reach the memory through the sessions' server state.
    explorer = Explorer(lambda: sessions.state)
    endpoint = MessageCheck(StreamableHTTPASGIApp(sessions), max_body_bytes=MAX_BODY_BYTES)
    starlette = Starlette(
        routes=[
            Route(MCP_PATH, endpoint=endpoint),
            # A key such as github.com/acme/api holds slashes: the rest of the path is the project.
            Route(MCP_PATH + "/projects/{project:path}", endpoint=_ProjectInPath(endpoint)),
            Route("/health", endpoint=health, methods=["GET"]),
            *explorer.routes(),
        ],
        lifespan=lambda app: sessions.run(),
    )
    streams = _OpenStreams(starlette)
    guard = RequestGuard(
        streams,
        allowed_hosts=allowed_host_names(network.host, network.allowed_hosts),
        allowed_origins=network.allowed_origins,
        credentials=network.credentials,
        open_paths=OPEN_PATHS | explorer.open_paths(),
    )

    def close_streams() -> None:
        streams.close_all()
        end_listen_streams(server)

    return guard, close_streams


class _ProjectInPath:
    """`/mcp/projects/NAME`: the MCP endpoint for a client that names its project in the URL (one
    that cannot send a header), as if it sent `X-Graphmem-Project: NAME` (server/access.py)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Decoded text, beside the headers (which are bytes, where a name such as café would not survive).
        await self.app({**scope, PROJECT_KEY: scope.get("path_params", {}).get("project", "")}, receive, send)


class _GracefulServer(uvicorn.Server):
    """uvicorn, ending the open GET streams first when it shuts down, and exiting 0 after a signal."""

    def __init__(self, config: uvicorn.Config, close_streams: Callable[[], None]) -> None:
        super().__init__(config)
        self._close_streams = close_streams

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Without this, every client's GET stream would hold shutdown for the whole grace period.
        self._close_streams()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn raises the signal again once it has stopped, so the process would end
        # "killed by SIGTERM"; a graceful stop is a normal exit here.
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket, bound here so that port 0 can be reported as the port it became."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


def run_http(
    server: Server[AppState], network: NetworkSettings, *, announce: Callable[[str], None], log_level: str = "warning"
) -> None:
    """Serve MCP over Streamable HTTP until SIGINT or SIGTERM, then stop gracefully.

    Args:
        server: the MCP server.
        network: where to listen and whom to let in.
        announce: told the URL once the server listens (the CLI prints it on stderr).
        log_level: uvicorn's log level.

    Raises:
        OSError: the address cannot be bound (in use, not this machine's).
    """
    app, close_streams = build_http_app(server, network)
    sock = _bind(network.host, network.port)
    loop = "uvloop" if event_loop_options() else "asyncio"
    config = uvicorn.Config(
        app,
        loop=loop,
        http=with_request_deadline(network.request_timeout),
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        lifespan="on",
        log_level=log_level,
        # graphmem's own log lines say more than one per request.
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=int(DRAIN_SECONDS),
    )
    uvicorn_server = _GracefulServer(config, close_streams)
    announce(_url(sock))
    uvicorn_server.run(sockets=[sock])
