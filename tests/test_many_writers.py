"""Many writers on one memory at once, over every transport: HTTP sessions, TCP connections, stdio processes.

Every write answered with success must be stored, and no client may ever see
"database is locked": two server processes on one SQLite file take turns
(BEGIN IMMEDIATE and a busy timeout), and inside a process calls take turns on one store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers_network import network_server, tcp_client
from tests.helpers_stdio import add_observations, create_entities, entity, raw_server
from tests.test_durability import assert_file_is_whole, stored_graph
from tests.test_http import sdk_session

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLS = 20

Call = Callable[[tuple[str, dict[str, Any]]], Awaitable[dict[str, Any]]]


class Ledger:
    """What the clients were told: the writes acknowledged, and every answer that was not a success."""

    def __init__(self) -> None:
        self.entities: set[str] = set()
        self.observations: set[str] = set()
        self.failures: list[str] = []

    async def write(self, call: Call, writer: str) -> None:
        for i in range(CALLS):
            name = f"{writer}-{i}"
            answer = await call(create_entities(entity(name, f"fact {name}")))
            self._note(answer, self.entities, name)
            shared = await call(add_observations("Shared", f"seen by {name}"))
            self._note(shared, self.observations, f"seen by {name}")

    def _note(self, answer: dict[str, Any], into: set[str], what: str) -> None:
        if "result" in answer and answer["result"].get("isError") is False:
            into.add(what)
        else:
            self.failures.append(str(answer)[:300])


def sdk_call(session: Any) -> Call:
    """A raw-answer-shaped call through the SDK's ClientSession."""

    async def call(request: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        _, params = request
        result = await session.call_tool(params["name"], params["arguments"])
        return {"result": {"isError": result.is_error, "text": result.content[0].text if result.content else ""}}

    return call


async def test_http_sessions_tcp_connections_and_stdio_processes_on_one_memory_lose_nothing(tmp_path: Path):
    memory = tmp_path / "memory.db"
    ledger = Ledger()

    async def over_http(server: Any, writer: str) -> None:
        async with sdk_session(server) as session:
            await ledger.write(sdk_call(session), writer)

    async def over_tcp(server: Any, writer: str) -> None:
        async with tcp_client(server) as client:
            await client.initialize()
            await ledger.write(client.call, writer)

    async def over_stdio(writer: str) -> None:
        async with raw_server(memory) as server:
            await server.initialize()
            await ledger.write(server.call, writer)

    with anyio.fail_after(180):
        async with network_server(memory, "--http") as http, network_server(memory, "--tcp") as tcp:
            async with tcp_client(tcp) as setup:
                await setup.initialize()
                await setup.call(create_entities(entity("Shared", entity_type="hub")))
            async with anyio.create_task_group() as tasks:
                for number in range(4):
                    tasks.start_soon(over_http, http, f"http{number}")
                    tasks.start_soon(over_tcp, tcp, f"tcp{number}")
                for number in range(2):
                    tasks.start_soon(over_stdio, f"stdio{number}")
            assert await http.stop() == 0, http.log()
            assert await tcp.stop() == 0, tcp.log()

    # Any failure at all fails the test, a "database is locked" first among them.
    assert ledger.failures == []
    graph = stored_graph(memory)
    stored = {e.name: e for e in graph.entities}
    assert len(ledger.entities) == 10 * CALLS
    assert ledger.entities <= set(stored)
    assert set(stored["Shared"].observations) == ledger.observations
    assert len(ledger.observations) == 10 * CALLS
    assert_file_is_whole(memory)
