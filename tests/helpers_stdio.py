"""A graphmem server process over raw pipes, for tests that need to see the bytes.

The MCP SDK's client hides what a server writes; these tests need to write any bytes
(invalid UTF-8, 20 MB lines, many requests before reading one answer) and to check that
every line the server writes is a JSON-RPC message. Lines are split on b"\\n" only, as
an MCP client splits them.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

# Bounds for waits on a server process: generous, because two cores may be running
# several servers at once, and only reached when something is wrong.
START_SECONDS = 20.0
EXIT_SECONDS = 10.0


def server_env(memory: Path | str) -> dict[str, str]:
    """The environment for a server on `memory` (a file, or a database URL), without any
    GRAPHMEM_* setting of the caller."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRAPHMEM_")}
    env["MEMORY_FILE_PATH"] = str(memory)
    return env


def entity(name: str, *observations: str, entity_type: str = "thing") -> dict[str, Any]:
    """An entity as the tools take it."""
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def create_entities(*entities: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The `tools/call` method and params of a create_entities call."""
    return "tools/call", {"name": "create_entities", "arguments": {"entities": list(entities)}}


def add_observations(name: str, *contents: str) -> tuple[str, dict[str, Any]]:
    """The `tools/call` method and params of an add_observations call on one entity."""
    observations = [{"entityName": name, "contents": list(contents)}]
    return "tools/call", {"name": "add_observations", "arguments": {"observations": observations}}


def read_graph() -> tuple[str, dict[str, Any]]:
    """The `tools/call` method and params of a read_graph call."""
    return "tools/call", {"name": "read_graph", "arguments": {}}


def is_tool_success(answer: dict[str, Any]) -> bool:
    """Whether an answer is a tool result that is not an error."""
    return "result" in answer and answer["result"].get("isError") is False


class RawServer:
    """One graphmem process, driven line by line over its stdin and stdout."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.lines: list[bytes] = []
        """Every line the server has written to stdout so far."""
        self.notifications: list[dict[str, Any]] = []
        """Notifications read while waiting for an answer, in the order they came."""
        self._buffer = bytearray()
        self._ids = itertools.count(1)
        self._early: dict[Any, dict[str, Any]] = {}

    def next_id(self) -> int:
        """A request id not used on this connection yet."""
        return next(self._ids)

    async def send_line(self, raw: bytes) -> None:
        """Write one line, exactly these bytes and a newline."""
        assert self.process.stdin is not None
        await self.process.stdin.send(raw + b"\n")

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as a compact JSON line."""
        await self.send_line(json.dumps(message, ensure_ascii=False).encode("utf-8"))

    async def send_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Write a request without waiting for its answer; returns its id."""
        request_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def receive_line(self) -> bytes:
        """The next line the server writes (without its newline)."""
        assert self.process.stdout is not None
        while (newline := self._buffer.find(b"\n")) < 0:
            self._buffer += await self.process.stdout.receive(1 << 16)
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        self.lines.append(line)
        return line

    async def receive(self) -> dict[str, Any]:
        """The next message the server writes; it must be a JSON-RPC 2.0 object on one line."""
        message = json.loads(await self.receive_line())
        assert isinstance(message, dict), message
        assert message.get("jsonrpc") == "2.0", message
        return message

    async def answer(self, request_id: Any) -> dict[str, Any]:
        """The answer to `request_id`; other answers read meanwhile are kept for later."""
        while request_id not in self._early:
            message = await self.receive()
            if "id" in message and ("result" in message or "error" in message):
                self._early[message["id"]] = message
            else:
                self.notifications.append(message)
        return self._early.pop(request_id)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and wait for its answer."""
        return await self.answer(await self.send_request(method, params))

    async def call(self, call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        """Send a (method, params) pair such as `create_entities(...)` and wait for its answer."""
        return await self.request(*call)

    async def initialize(self) -> dict[str, Any]:
        """The initialize handshake; returns the initialize answer."""
        await self.send(INITIALIZE)
        answer = await self.answer(INITIALIZE["id"])
        await self.send(INITIALIZED)
        return answer

    async def close_stdin(self) -> None:
        """Close the server's stdin, as a client does to end the session."""
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    async def read_to_end(self) -> list[bytes]:
        """Every line the server writes until it closes stdout; then wait for it to exit."""
        assert self.process.stdout is not None
        rest: list[bytes] = []
        while True:
            try:
                self._buffer += await self.process.stdout.receive(1 << 16)
            except anyio.EndOfStream:
                break
            while (newline := self._buffer.find(b"\n")) >= 0:
                rest.append(bytes(self._buffer[:newline]))
                del self._buffer[: newline + 1]
        assert not self._buffer, f"a partial line at the end of stdout: {bytes(self._buffer[:200])!r}"
        self.lines += rest
        await self.process.wait()
        return rest

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to finish anything."""
        self.process.send_signal(signal.SIGKILL)


@asynccontextmanager
async def raw_server(
    memory: Path, *args: str, stderr: Path | None = None, database: str | None = None
) -> AsyncIterator[RawServer]:
    """Start `python -m graphmem` on `memory`; stop it (stdin closed, then killed) on the way out.

    Args:
        memory: the memory file, given in MEMORY_FILE_PATH.
        args: extra command-line arguments, such as `serve --log-level debug`.
        stderr: where the server's stderr goes; by default a file beside the memory.
        database: a PostgreSQL URL to serve instead of `memory` (whose name then only
            places the stderr file).
    """
    log = stderr or memory.with_name(memory.name + ".stderr")
    with log.open("ab") as errors:
        process = await anyio.open_process(
            [sys.executable, "-m", "graphmem", *args], env=server_env(database or memory), stderr=errors
        )
    server = RawServer(process)
    try:
        yield server
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                if process.stdin is not None:
                    await process.stdin.aclose()
                with anyio.move_on_after(EXIT_SECONDS):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            await process.aclose()


def server_log(memory: Path) -> str:
    """What the servers on `memory` wrote to stderr (for assertion messages)."""
    log = memory.with_name(memory.name + ".stderr")
    return log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else ""
