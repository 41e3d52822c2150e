"""While another process holds the memory's write lock, the server keeps answering pings and reads.

A write waits for the lock (up to a minute), asleep between attempts, instead of holding
the event loop or the store's thread; writes still take effect in the order they came,
and once the lock is free every one of them is stored.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from graphmem.config import Settings
from graphmem.core.errors import StorageBusyError
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server.store_access import StoreAccess
from graphmem.storage import open_store
from tests.helpers_stdio import add_observations, create_entities, entity, is_tool_success, raw_server, read_graph

pytestmark = pytest.mark.anyio

MEMORIES = ["memory.db", "memory.jsonl"]


@contextmanager
def _held_by_another_process(memory: Path) -> Iterator[None]:
    """The memory's write lock, taken as another graphmem (or an import) takes it."""
    if memory.suffix == ".jsonl":
        fd = os.open(f"{memory}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return
    connection = sqlite3.connect(memory, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        connection.execute("ROLLBACK")
        connection.close()


def _names(answer: dict) -> list[str]:
    return [item["name"] for item in answer["result"]["structuredContent"]["entities"]]


@pytest.mark.slow
@pytest.mark.parametrize("name", MEMORIES)
async def test_pings_and_reads_are_answered_while_a_write_waits_for_another_process(tmp_path: Path, name: str):
    memory = tmp_path / name
    with anyio.fail_after(60):
        async with raw_server(memory) as server:
            await server.initialize()
            assert is_tool_success(await server.call(create_entities(entity("Before"))))
            with _held_by_another_process(memory):
                first = await server.send_request(*create_entities(entity("Waiting")))
                # Depends on the first: it must not run before it.
                second = await server.send_request(*add_observations("Waiting", "added after the wait"))
                with anyio.fail_after(5):
                    assert (await server.request("ping"))["result"] == {}
                    assert _names(await server.call(read_graph())) == ["Before"]
            with anyio.fail_after(10):
                assert is_tool_success(await server.answer(first))
                assert is_tool_success(await server.answer(second))
            graph = (await server.call(read_graph()))["result"]["structuredContent"]
    assert [item["name"] for item in graph["entities"]] == ["Before", "Waiting"]
    assert graph["entities"][1]["observations"] == ["added after the wait"]


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "store-thread"])
@pytest.mark.parametrize("name", MEMORIES)
async def test_a_write_gives_up_after_the_lock_wait_having_changed_nothing(tmp_path: Path, name: str, inline: bool):
    memory = tmp_path / name
    store = open_store(Settings(memory_path=memory))
    graph = KnowledgeGraph(store)
    access = StoreAccess(store, inline=inline, lock_wait=0.3)
    try:
        with _held_by_another_process(memory), anyio.fail_after(5):
            with pytest.raises(StorageBusyError):
                await access.run(graph.create_entities, [Entity("Never", "t", ())])
            # A read is served meanwhile, from the memory as it was.
            assert (await access.run(graph.read_graph, writes=False)).entities == ()
        assert [entity.name for entity in graph.read_graph().entities] == []
        await access.run(graph.create_entities, [Entity("Later", "t", ())])
    finally:
        await anyio.to_thread.run_sync(access.stop)
        store.close()
    reopened = open_store(Settings(memory_path=memory))
    try:
        assert [entity.name for entity in KnowledgeGraph(reopened).read_graph().entities] == ["Later"]
    finally:
        reopened.close()


async def test_a_call_that_wrote_before_it_found_the_lock_taken_is_not_made_again(tmp_path: Path):
    memory = tmp_path / "memory.db"
    store = open_store(Settings(memory_path=memory))
    graph = KnowledgeGraph(store)
    access = StoreAccess(store, inline=True, lock_wait=5)
    attempts = []

    def write_then_find_the_lock_taken() -> None:
        attempts.append(1)
        graph.create_entities([Entity(f"Written {len(attempts)}", "t", ())])
        with _held_by_another_process(memory):
            graph.create_entities([Entity("Blocked", "t", ())])

    try:
        with anyio.fail_after(5), pytest.raises(StorageBusyError):
            await access.run(write_then_find_the_lock_taken)
        assert len(attempts) == 1
        assert [entity.name for entity in graph.read_graph().entities] == ["Written 1"]
    finally:
        store.close()
