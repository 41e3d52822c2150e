"""The MCP SDK's client on a graphmem server over each transport, for behaviour tests that run on all.

A transport is a function that starts a server on a memory file with some serve
options and yields the connected SDK `Client`: in process over the SDK's in-memory
streams, or a real `python -m graphmem` process over stdio, Streamable HTTP or TCP on
loopback. Adding a transport is one function here and one name in `TRANSPORTS`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pydantic import TypeAdapter

import graphmem
from graphmem.config import Settings
from graphmem.server import build_server
from tests.helpers_network import network_server, tcp_transport
from tests.helpers_stdio import START_SECONDS


def sdk_client_env(memory: Path) -> dict[str, str]:
    """What the SDK's stdio client must pass a server on `memory` beyond its own few variables.

    The SDK hands the server only HOME, LOGNAME, PATH, SHELL, TERM and USER of our
    environment. PYTHONPATH makes the server import the graphmem under test, not
    whichever one the interpreter has installed (another checkout, in a worktree).
    """
    return {"MEMORY_FILE_PATH": str(memory), "PYTHONPATH": str(Path(graphmem.__file__).resolve().parents[1])}


@dataclass(frozen=True)
class Serve:
    """How to start the server: the `graphmem serve` options a test needs."""

    toolset: str | None = None
    tools: str | None = None
    log_level: str = "warning"
    """The server's own log level (`--log-level`), which bounds what a client can get."""
    semantic: bool | None = None
    """`--semantic` / `--no-semantic`; None leaves the default (on)."""
    json_response: bool = False
    """`--json-response` (HTTP only): every answer one JSON body instead of an SSE stream."""


Connect = Callable[..., AbstractAsyncContextManager[Client]]
"""`connect(memory, serve=Serve(), **client_options)`: the connected client, as a context manager.

The client speaks the initialize handshake (`mode="legacy"`: what Claude Desktop, Cursor and
the official server use) unless the options give another `mode` ("auto", the SDK's default,
discovers protocol 2026-07-28 and speaks it)."""


def _with_mode(client_options: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "legacy", **client_options}


@asynccontextmanager
async def _in_memory(memory: Path, serve: Serve = Serve(), **client_options: Any) -> AsyncIterator[Client]:
    settings = Settings.from_env(
        {}, memory_file=str(memory), toolset=serve.toolset, tools=serve.tools, semantic=serve.semantic
    )
    # In process the server shares our logging: the graphmem logger gets the level the
    # process would get from --log-level, for as long as the client is connected.
    graphmem_logger = logging.getLogger("graphmem")
    previous = graphmem_logger.level
    graphmem_logger.setLevel(serve.log_level.upper())
    try:
        async with Client(build_server(settings), **_with_mode(client_options)) as client:
            yield client
    finally:
        graphmem_logger.setLevel(previous)


def _serve_args(serve: Serve) -> list[str]:
    args = ["--log-level", serve.log_level]
    if serve.toolset is not None:
        args += ["--toolset", serve.toolset]
    if serve.tools is not None:
        args += ["--tools", serve.tools]
    if serve.semantic is not None:
        args.append("--semantic" if serve.semantic else "--no-semantic")
    if serve.json_response:
        args.append("--json-response")
    return args


@asynccontextmanager
async def _stdio(memory: Path, serve: Serve = Serve(), **client_options: Any) -> AsyncIterator[Client]:
    with anyio.fail_after(START_SECONDS):
        async with _stdio_client(memory, serve, **client_options) as client:
            yield client


@asynccontextmanager
async def _stdio_client(memory: Path, serve: Serve = Serve(), **client_options: Any) -> AsyncIterator[Client]:
    """`python -m graphmem serve` and the SDK client on its pipes, for as long as the caller needs it."""
    args = ["-m", "graphmem", "serve", *_serve_args(serve)]
    faults: list[Exception] = []
    user_handler = client_options.pop("message_handler", None)

    async def on_message(message: Any) -> None:
        # The SDK hands a stdout line it cannot parse to the message handler as an exception.
        if isinstance(message, Exception):
            faults.append(message)
        elif user_handler is not None:
            await user_handler(message)

    server = StdioServerParameters(command=sys.executable, args=args, env=sdk_client_env(memory))
    async with Client(server, message_handler=on_message, **_with_mode(client_options)) as client:
        yield client
    assert faults == [], "the server wrote a line on stdout that is not JSON-RPC"


@asynccontextmanager
async def _http(memory: Path, serve: Serve = Serve(), **client_options: Any) -> AsyncIterator[Client]:
    """`graphmem serve --http` on loopback, and the SDK client on its URL."""
    async with network_server(memory, "--http", *_serve_args(serve), env=sdk_client_env(memory)) as server:
        with anyio.fail_after(START_SECONDS):
            async with Client(server.url, **_with_mode(client_options)) as client:
                yield client


@asynccontextmanager
async def _tcp(memory: Path, serve: Serve = Serve(), **client_options: Any) -> AsyncIterator[Client]:
    """`graphmem serve --tcp` on loopback, and the SDK client over the socket's lines."""
    async with network_server(memory, "--tcp", *_serve_args(serve), env=sdk_client_env(memory)) as server:
        with anyio.fail_after(START_SECONDS):
            async with Client(tcp_transport(server, token=None), **_with_mode(client_options)) as client:
                yield client


TRANSPORTS: dict[str, Connect] = {"memory": _in_memory, "stdio": _stdio, "http": _http, "tcp": _tcp}
"""Every transport the behaviour tests run over, by the name the test ids show."""

SLOW_TRANSPORTS = {"stdio", "http", "tcp"}
"""Transports that start a process (marked `slow`)."""


class SharedServers:
    """The servers the tests of one module share over one transport: one per `Serve`, each on its own memory.

    Starting a server process costs about a second of CPU (importing the MCP SDK), so a
    module starts one per serve options and its tests connect to it. Over HTTP and TCP,
    which serve many clients, every `session` is a new client session on that server.
    Over stdio a process serves one client: `shared_session` hands every test that asks
    the same session (for tests that set no session state and bring no client options),
    and `session` starts a process of its own on the same memory. In process, every
    session is a new in-process server on that memory. The memory is shared as well:
    a test that writes uses names no other test of the module uses.
    """

    def __init__(self, transport: str, folder: Path, tasks: TaskGroup) -> None:
        self.transport = transport
        self._folder = folder
        self._tasks = tasks
        self._memories: dict[Serve, Path] = {}
        self._running: dict[Serve, Any] = {}
        """The network server, or over stdio the shared client, for each serve options started."""
        self._closed = anyio.Event()

    def memory(self, serve: Serve = Serve()) -> Path:
        """The memory file of the server for `serve`."""
        return self._memories.setdefault(serve, self._folder / f"memory-{len(self._memories)}.db")

    @asynccontextmanager
    async def session(self, serve: Serve = Serve(), **client_options: Any) -> AsyncIterator[Client]:
        """A client with a session of its own on the server for `serve` (over stdio, a process of its own)."""
        memory = self.memory(serve)
        if self.transport not in ("http", "tcp"):
            async with TRANSPORTS[self.transport](memory, serve, **client_options) as client:
                yield client
            return
        flags = (f"--{self.transport}", *_serve_args(serve))
        server = await self._start(serve, lambda: network_server(memory, *flags, env=sdk_client_env(memory)))
        with anyio.fail_after(START_SECONDS):
            target = server.url if self.transport == "http" else tcp_transport(server, token=None)
            async with Client(target, **_with_mode(client_options)) as client:
                yield client

    @asynccontextmanager
    async def shared_session(self, serve: Serve = Serve()) -> AsyncIterator[Client]:
        """A client whose session other tests may use too: over stdio, the one session of the module's process."""
        if self.transport != "stdio":
            async with self.session(serve) as client:
                yield client
            return
        client = await self._start(serve, lambda: _stdio_client(self.memory(serve), serve))
        with anyio.fail_after(START_SECONDS):
            yield client

    async def _start(self, serve: Serve, open_: Callable[[], AbstractAsyncContextManager[Any]]) -> Any:
        if serve not in self._running:
            with anyio.fail_after(START_SECONDS):
                self._running[serve] = await self._tasks.start(self._hold, open_)
        return self._running[serve]

    async def _hold(
        self, open_: Callable[[], AbstractAsyncContextManager[Any]], *, task_status: TaskStatus[Any]
    ) -> None:
        # Entered and left in this one task, which the module's task group keeps alive.
        async with open_() as running:
            task_status.started(running)
            await self._closed.wait()

    def close(self) -> None:
        """Stop every server (when the module's task group is left)."""
        self._closed.set()


_ANY_RESULT = TypeAdapter(dict[str, Any])


async def raw_request(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send a request with exactly these params, past the client's own checks; its result as a dict.

    Raises:
        MCPError: the server answered with an error.
    """
    request = types.Request[dict[str, Any] | None, str](method=method, params=params)
    return await client.session.send_request(request, _ANY_RESULT)
