"""Durability on real processes: a write that was answered with success is on disk.

Each test starts `python -m graphmem` and talks to it over raw pipes, the way an MCP
client does, then checks the memory with a fresh store or a fresh process. The official
server keeps 1 of 20 pipelined creates on one connection; graphmem must keep them all,
across processes, and through a SIGKILL.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from graphmem.config import Settings
from graphmem.core.models import Graph
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from tests.helpers_stdio import (
    RawServer,
    add_observations,
    create_entities,
    entity,
    is_tool_success,
    raw_server,
    read_graph,
    server_log,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BACKENDS = [pytest.param("memory.db", id="sqlite"), pytest.param("memory.jsonl", id="jsonl")]


def stored_graph(memory: Path) -> Graph:
    """The graph on disk, read with a store of its own (not through any server)."""
    store = open_store(Settings(memory_path=memory))
    try:
        return KnowledgeGraph(store).read_graph()
    finally:
        store.close()


def assert_file_is_whole(memory: Path) -> None:
    """The memory file is not corrupt: SQLite's integrity check passes, or every JSONL line parses."""
    if memory.suffix == ".jsonl":
        for number, line in enumerate(memory.read_text(encoding="utf-8").split("\n"), 1):
            if line.strip():
                record = json.loads(line)
                assert record["type"] in ("entity", "relation"), f"line {number}: {line[:200]}"
    else:
        with sqlite3.connect(memory) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


async def test_100_creates_pipelined_on_one_connection_are_all_answered_with_success_and_all_stored(tmp_path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(30):
        async with raw_server(memory) as server:
            await server.initialize()
            # Every request is written before any answer is read.
            ids = [await server.send_request(*create_entities(entity(f"E{i}", f"fact {i}"))) for i in range(100)]
            answers = [await server.answer(request_id) for request_id in ids]

    assert [is_tool_success(answer) for answer in answers] == [True] * 100, answers
    graph = stored_graph(memory)
    assert {e.name: list(e.observations) for e in graph.entities} == {f"E{i}": [f"fact {i}"] for i in range(100)}


async def _write_from_one_process(memory: Path, worker: int, answers: list[dict[str, Any]]) -> None:
    async with raw_server(memory) as server:
        await server.initialize()
        # Every worker creates "Shared"; only the first create makes it, the others skip it.
        answers.append(await server.call(create_entities(entity("Shared", entity_type="hub"))))
        ids = []
        for i in range(50):
            ids.append(await server.send_request(*create_entities(entity(f"w{worker}-{i}", f"made by {worker}"))))
            ids.append(await server.send_request(*add_observations("Shared", f"w{worker}-{i} was here")))
            ids.append(await server.send_request(*add_observations(f"w{worker}-{i}", "checked")))
        answers += [await server.answer(request_id) for request_id in ids]


@pytest.mark.parametrize("filename", BACKENDS)
async def test_4_processes_writing_one_memory_at_once_lose_no_acknowledged_write(tmp_path, filename):
    memory = tmp_path / filename
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(50):
        async with anyio.create_task_group() as tasks:
            for worker in range(4):
                tasks.start_soon(_write_from_one_process, memory, worker, answers)

    assert len(answers) == 4 * 151
    failures = [answer for answer in answers if not is_tool_success(answer)]
    assert failures == [], server_log(memory)
    graph = stored_graph(memory)
    observations = {e.name: list(e.observations) for e in graph.entities}
    expected = {f"w{w}-{i}": [f"made by {w}", "checked"] for w in range(4) for i in range(50)}
    assert {name: obs for name, obs in observations.items() if name != "Shared"} == expected
    assert sorted(observations["Shared"]) == sorted(f"w{w}-{i} was here" for w in range(4) for i in range(50))
    assert_file_is_whole(memory)


async def _stream_writes_until_killed(server: RawServer, acknowledged: set[str], kill_after: int) -> None:
    """Write up to 400 creates while reading answers; SIGKILL the server after `kill_after` successes."""
    names: dict[int, str] = {}

    async def write() -> None:
        for i in range(400):
            name = f"K{i}"
            # Assigned before the write: the answer may come back before send_request returns.
            request_id = server.next_id()
            names[request_id] = name
            call = create_entities(entity(name, *(f"{name} fact {n}" for n in range(5))))
            await server.send({"jsonrpc": "2.0", "id": request_id, "method": call[0], "params": call[1]})

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(write)
        while len(acknowledged) < kill_after:
            answer = await server.receive()
            assert is_tool_success(answer), answer
            acknowledged.add(names[answer["id"]])
        server.kill()
        # The writer may be blocked on a full pipe to a process that is gone.
        tasks.cancel_scope.cancel()
    await server.process.wait()


@pytest.mark.parametrize("filename", BACKENDS)
async def test_sigkill_in_the_middle_of_writes_keeps_every_acknowledged_write_and_a_whole_file(tmp_path, filename):
    memory = tmp_path / filename
    acknowledged: set[str] = set()
    with anyio.fail_after(40):
        async with raw_server(memory) as server:
            await server.initialize()
            await _stream_writes_until_killed(server, acknowledged, kill_after=120)
        assert server.process.returncode == -9

        # The memory opens in a new process, which still serves reads and writes.
        async with raw_server(memory) as fresh:
            await fresh.initialize()
            answer = await fresh.call(read_graph())
            created = await fresh.call(create_entities(entity("After the crash")))

    assert is_tool_success(answer), answer
    assert is_tool_success(created), created
    served = {e["name"]: e["observations"] for e in answer["result"]["structuredContent"]["entities"]}
    assert acknowledged <= served.keys()
    for name in served:
        # Writes that were in flight are there whole or not at all.
        assert served[name] == [f"{name} fact {n}" for n in range(5)]
    assert_file_is_whole(memory)
    assert {e.name for e in stored_graph(memory).entities} == {*served, "After the crash"}


@pytest.mark.parametrize("filename", BACKENDS)
async def test_writes_still_in_flight_when_the_client_closes_stdin_are_finished_answered_and_stored(tmp_path, filename):
    memory = tmp_path / filename
    with anyio.fail_after(30):
        async with raw_server(memory) as server:
            await server.initialize()
            for i in range(50):
                await server.send_request(*create_entities(entity(f"E{i}")))
            # As `printf ... | graphmem` does: the last request, then end of input at once.
            await server.close_stdin()
            lines = await server.read_to_end()
    answers = [json.loads(line) for line in lines]
    assert sorted(answer["id"] for answer in answers) == list(range(1, 51))
    assert all(is_tool_success(answer) for answer in answers), answers
    assert server.process.returncode == 0
    assert {e.name for e in stored_graph(memory).entities} == {f"E{i}" for i in range(50)}
