"""A PostgreSQL server that goes away and comes back: calls fail at once and say so, the first
call after it succeeds, and search by meaning waits it out (issue 27, items 6, 7 and 8).

Each test stops a throw-away server of the module's own (a fast shutdown: every session
ended, new connections refused) and starts it again on the same port.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest
from mcp import Client
from psycopg_pool import ConnectionPool

from graphmem.core.errors import StorageError
from graphmem.core.models import Entity
from graphmem.server.embedding_worker import START_DELAY_SECONDS
from graphmem.storage.postgres import PostgresStore, connection
from graphmem.storage.postgres.connection import POOL_MAX, POOL_WAIT_SECONDS
from graphmem.storage.postgres.lending import ConnectionLender
from tests.helpers_clients import TRANSPORTS, Serve
from tests.helpers_network import network_server
from tests.helpers_postgres import StoppablePostgres, running_stoppable_postgres, stoppable_postgres_unavailable
from tests.test_search_by_meaning_served import PEOPLE, _found_by_meaning

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

FAILS_WITHIN_SECONDS = 2.0
"""A call to a server that refuses connections (stopped, or restarting) fails at once: well within this."""


@pytest.fixture(scope="module")
def database_server() -> Iterator[StoppablePostgres]:
    reason = stoppable_postgres_unavailable()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server of the tests' own can be had here: {reason}")
    with running_stoppable_postgres() as server:
        yield server


@pytest.fixture
def stoppable(database_server: StoppablePostgres) -> Iterator[StoppablePostgres]:
    """The module's server, running again after the test whatever the test did."""
    yield database_server
    database_server.start()


def _embedding_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "graphmem.embedding"]


def test_while_the_database_is_down_each_call_fails_at_once_saying_so_and_the_first_call_after_it_succeeds(
    stoppable: StoppablePostgres,
):
    store = PostgresStore(stoppable.create_database(), "postgresql://db.example/team")
    try:
        with store.write():
            store.insert_entities([Entity("Ada", "person", ("writes programs",))])
        stoppable.stop()
        # Eight seconds: the pool's own reconnection attempts back off to 4 s and more by then.
        for _ in range(8):
            started = time.monotonic()
            with pytest.raises(StorageError) as caught, store.read():
                store.get_entities(["Ada"])
            assert time.monotonic() - started < FAILS_WITHIN_SECONDS
            message = str(caught.value)
            assert message.startswith("The database at postgresql://db.example/team is unreachable")
            assert "nothing was changed" in message and "Retry" in message
            assert "\n" not in message
            time.sleep(1.0)
        stoppable.start()
        started = time.monotonic()
        with store.read():
            assert store.get_entities(["Ada"])[0].observations == ("writes programs",)
        assert time.monotonic() - started < FAILS_WITHIN_SECONDS
        with store.write():
            store.append_observations("Ada", ["reads proofs"])
    finally:
        store.close()


@pytest.mark.anyio
async def test_calls_made_together_during_an_outage_each_fail_at_once_instead_of_queueing(
    stoppable: StoppablePostgres,
):
    url = stoppable.create_database()
    async with TRANSPORTS["memory"](url, Serve(semantic=False)) as client:  # type: ignore[arg-type]
        await client.call_tool("create_entities", {"entities": PEOPLE})
        await anyio.to_thread.run_sync(stoppable.stop)
        answers: list[tuple[bool, str, float]] = []

        async def call(name: str) -> None:
            started = time.monotonic()
            result = await client.call_tool("open_nodes", {"names": [name]})
            text = result.content[0].text  # type: ignore[union-attr]
            answers.append((result.is_error, text, time.monotonic() - started))

        with anyio.fail_after(4 * FAILS_WITHIN_SECONDS):
            async with anyio.create_task_group() as calls:
                for name in ("Bob", "Alice", "Carol", "Bob"):
                    calls.start_soon(call, name)
        assert len(answers) == 4
        for failed, text, took in answers:
            assert failed and "is unreachable" in text and "nothing was changed" in text
            assert took < FAILS_WITHIN_SECONDS
        await anyio.to_thread.run_sync(stoppable.start)
        result = await client.call_tool("open_nodes", {"names": ["Bob"]})
        assert not result.is_error


@pytest.mark.anyio
async def test_search_by_meaning_waits_out_a_database_down_when_the_worker_first_connects_saying_so_once(
    stoppable: StoppablePostgres, caplog: pytest.LogCaptureFixture
):
    url = stoppable.create_database()
    async with TRANSPORTS["memory"](url) as client:  # type: ignore[arg-type]
        await anyio.to_thread.run_sync(stoppable.stop)
        # The first call starts the worker, which connects a moment later, while the database is down.
        assert (await client.call_tool("read_graph", {})).is_error
        await anyio.sleep(START_DELAY_SECONDS + 2.0)
        await anyio.to_thread.run_sync(stoppable.start)
        assert not (await client.call_tool("create_entities", {"entities": PEOPLE})).is_error
        await _found_by_meaning(client, "Who moved abroad?", "Bob")
    lines = _embedding_lines(caplog)
    assert [record.exc_info for record in lines] == [None, None]
    assert "waits for the memory" in lines[0].getMessage() and "cannot be reached" in lines[0].getMessage()
    assert "goes on" in lines[1].getMessage()


@pytest.mark.anyio
async def test_an_outage_while_the_worker_embeds_is_one_line_without_a_traceback_and_embedding_goes_on_after(
    stoppable: StoppablePostgres, caplog: pytest.LogCaptureFixture
):
    url = stoppable.create_database()
    async with TRANSPORTS["memory"](url) as client:  # type: ignore[arg-type]
        assert not (await client.call_tool("create_entities", {"entities": PEOPLE})).is_error
        await _found_by_meaning(client, "Who moved abroad?", "Bob")
        await anyio.to_thread.run_sync(stoppable.stop)
        await anyio.sleep(3.0)
        await anyio.to_thread.run_sync(stoppable.start)
        added = await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Carol", "contents": ["is training to fly planes"]}]}
        )
        assert not added.is_error
        await _found_by_meaning(client, "Who wants to become a pilot?", "Carol")
    lines = _embedding_lines(caplog)
    assert [record.exc_info for record in lines] == [None, None]
    assert "waits for the memory" in lines[0].getMessage()
    assert "goes on" in lines[1].getMessage()


@pytest.mark.anyio
async def test_a_served_process_writes_one_line_when_an_outage_stops_embedding_and_one_when_it_goes_on(
    stoppable: StoppablePostgres,
):
    url = stoppable.create_database()
    async with network_server(url, "--http", "--log-level", "warning") as server:  # type: ignore[arg-type]
        async with Client(server.url, mode="legacy") as client:
            assert not (await client.call_tool("create_entities", {"entities": PEOPLE})).is_error
            await _found_by_meaning(client, "Who moved abroad?", "Bob")
            await anyio.to_thread.run_sync(stoppable.stop)
            failed = await client.call_tool("open_nodes", {"names": ["Bob"]})
            assert failed.is_error
            await anyio.sleep(3.0)
            await anyio.to_thread.run_sync(stoppable.start)
            added = await client.call_tool(
                "add_observations",
                {"observations": [{"entityName": "Carol", "contents": ["is training to fly planes"]}]},
            )
            assert not added.is_error
            await _found_by_meaning(client, "Who wants to become a pilot?", "Carol")
        lines = [line for line in server.stderr.decode("utf-8", errors="replace").splitlines() if line.strip()]
    after_start = [line for line in lines if not line.startswith(("graphmem serving", "explorer"))]
    assert len(after_start) == 2, after_start
    assert after_start[0].startswith("graphmem WARNING: search by meaning waits for the memory: ")
    assert after_start[1] == "graphmem WARNING: search by meaning goes on: the memory answers again"


def test_a_call_finding_every_pooled_connection_lent_makes_one_of_its_own_and_the_lent_ones_come_back_unharmed(
    stoppable: StoppablePostgres,
):
    store = PostgresStore(stoppable.create_database(), "postgresql://db.example/team")
    held = threading.Barrier(POOL_MAX + 1)
    release = threading.Event()
    try:
        with store.write():
            store.insert_entities([Entity("Ada", "person", ("writes programs",))])

        def hold_a_connection() -> list[str]:
            with store.read():
                held.wait(timeout=10)
                release.wait(timeout=30)
                return store.observations_of("Ada")

        with ThreadPoolExecutor(POOL_MAX) as holders:
            results = [holders.submit(hold_a_connection) for _ in range(POOL_MAX)]
            held.wait(timeout=10)
            started = time.monotonic()
            with store.read():
                assert store.observations_of("Ada") == ["writes programs"]
            assert time.monotonic() - started < POOL_WAIT_SECONDS + FAILS_WITHIN_SECONDS
            release.set()
            assert [result.result(timeout=10) for result in results] == [["writes programs"]] * POOL_MAX
        with store.write():
            store.append_observations("Ada", ["reads proofs"])
        with store.read():
            assert store.observations_of("Ada") == ["writes programs", "reads proofs"]
    finally:
        release.set()
        store.close()


def test_a_pooled_connection_the_pool_retires_after_its_lifetime_keeps_the_pool(postgres_url: str, monkeypatch):
    # The pool closes a connection past its max_lifetime as it comes back: a healthy database,
    # so the pool must stay (taking the close for a lost connection threw it away every hour).
    monkeypatch.setattr(connection, "ConnectionPool", functools.partial(ConnectionPool, max_lifetime=0.5))
    lender = ConnectionLender(postgres_url, "the test database")
    try:
        pool = lender._pool
        with lender.first_statement("SELECT 1") as (conn, _):
            time.sleep(1.0)
        assert conn.closed and not conn.broken  # retired by the pool, not lost
        assert lender._pool is pool
        with lender.first_statement("SELECT 1") as (_, cursor):
            assert cursor.fetchone() == (1,)
        assert lender._pool is pool
    finally:
        lender.close()
