"""Real `graphmem serve --http` / `--tcp` processes on loopback, and small clients for them.

The server is started on port 0 and says where it listens on stderr; these helpers
read that line, keep draining stderr (so a chatty server never blocks on it), and
stop the server with SIGTERM on the way out, as a service manager does.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage

from tests.helpers_stdio import EXIT_SECONDS, INITIALIZE, INITIALIZED, START_SECONDS, server_env

TOKEN = "test-token-0123456789abcdef"

SessionStreams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
"""What an SDK client session reads from and writes to."""
_ANNOUNCE = re.compile(rb"at ((?:http|tcp)://\S+)")


@dataclass
class NetworkServer:
    """A running server process and where it listens."""

    process: anyio.abc.Process
    url: str
    """`http://127.0.0.1:PORT/mcp` or `tcp://127.0.0.1:PORT`."""
    stderr: bytearray = field(default_factory=bytearray)

    @property
    def base(self) -> str:
        """The HTTP server's root, without /mcp."""
        return self.url.removesuffix("/mcp")

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").removesuffix("/mcp").rsplit(":", 1)[1])

    def log(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")[-4000:]

    async def stop(self) -> int:
        """SIGTERM, then wait for the exit; returns the exit status."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(EXIT_SECONDS):
            return await self.process.wait()


@asynccontextmanager
async def network_server(memory: Path, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[NetworkServer]:
    """Start `python -m graphmem serve ARGS --port 0` on `memory`; stop it on the way out."""
    full_env = server_env(memory) | (env or {})
    process = await anyio.open_process(
        [sys.executable, "-m", "graphmem", "serve", *args, "--port", "0"],
        env=full_env,
    )
    assert process.stderr is not None
    errors = bytearray()
    try:
        async with anyio.create_task_group() as tasks:
            with anyio.fail_after(START_SECONDS):
                while (match := _ANNOUNCE.search(errors)) is None:
                    try:
                        errors += await process.stderr.receive()
                    except anyio.EndOfStream:
                        raise AssertionError(f"the server exited: {errors.decode(errors='replace')}") from None
            # A server bound to every address is reached on loopback.
            url = match.group(1).decode("ascii").replace("//0.0.0.0:", "//127.0.0.1:")
            server = NetworkServer(process, url, errors)

            async def drain() -> None:
                assert process.stderr is not None
                async for chunk in process.stderr:
                    errors.extend(chunk)

            tasks.start_soon(drain)
            try:
                yield server
            finally:
                with anyio.CancelScope(shield=True):
                    if process.returncode is None:
                        process.send_signal(signal.SIGTERM)
                        with anyio.move_on_after(EXIT_SECONDS):
                            await process.wait()
                    if process.returncode is None:
                        process.kill()
                        await process.wait()
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()


class TcpClient:
    """One raw TCP connection to a graphmem server, line by line."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self._buffer = bytearray()
        self._ids = itertools.count(1)
        self._early: dict[Any, dict[str, Any]] = {}

    async def send_line(self, raw: bytes) -> None:
        await self.stream.send(raw + b"\n")

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_line(json.dumps(message).encode("utf-8"))

    async def receive_line(self) -> bytes | None:
        """The next line, or None when the server closed the connection."""
        while (newline := self._buffer.find(b"\n")) < 0:
            try:
                self._buffer += await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return None
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        return line

    async def receive(self) -> dict[str, Any]:
        line = await self.receive_line()
        assert line is not None, "the server closed the connection"
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while request_id not in self._early:
            answer = await self.receive()
            if "id" in answer and ("result" in answer or "error" in answer):
                self._early[answer["id"]] = answer
        return self._early.pop(request_id)

    async def call_later(self, call: tuple[str, dict[str, Any]]) -> int:
        """Send a (method, params) pair without waiting; returns the request id."""
        request_id = next(self._ids)
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": call[0], "params": call[1]})
        return request_id

    async def call(self, call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        return await self.request(*call)

    async def authenticate(self, token: str = TOKEN) -> dict[str, Any]:
        return await self.request("graphmem/authenticate", {"token": token})

    async def initialize(self) -> dict[str, Any]:
        await self.send(INITIALIZE)
        while True:
            answer = await self.receive()
            if answer.get("id") == INITIALIZE["id"]:
                break
        await self.send(INITIALIZED)
        return answer


@asynccontextmanager
async def tcp_client(server: NetworkServer) -> AsyncIterator[TcpClient]:
    stream = await anyio.connect_tcp("127.0.0.1", server.port)
    async with stream:
        yield TcpClient(stream)


@asynccontextmanager
async def tcp_transport(
    server: NetworkServer, token: str | None = TOKEN
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Streams for the SDK's client over one TCP connection (after the token line, if a token is given)."""
    stream = await anyio.connect_tcp("127.0.0.1", server.port)
    async with stream:
        client = TcpClient(stream)
        if token is not None:
            answer = await client.authenticate(token)
            assert answer.get("result") == {}, answer
        to_session, from_socket = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        to_socket, from_session = anyio.create_memory_object_stream[SessionMessage](16)

        async def read() -> None:
            async with to_session:
                while (line := await client.receive_line()) is not None:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    await to_session.send(SessionMessage(message))

        async def write() -> None:
            async with from_session:
                async for item in from_session:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stream.send(data.encode("utf-8") + b"\n")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            yield from_socket, to_socket
            tasks.cancel_scope.cancel()


@asynccontextmanager
async def tcp_session(server: NetworkServer, token: str | None = TOKEN) -> AsyncIterator[ClientSession]:
    """The SDK's ClientSession over a TCP connection (after the token line, if a token is given)."""
    async with tcp_transport(server, token) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session
