"""What only the PostgreSQL backend has: a server to reach, many writers, its own errors and timeouts."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest

from graphmem.core.errors import MemoryOpenError, SchemaVersionError, StorageBusyError, StorageError, TimeLimitError
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage.postgres import PostgresStore
from graphmem.storage.postgres.connection import map_postgres_errors
from graphmem.storage.postgres.schema import SCHEMA_VERSION
from graphmem.storage.sqlite import SQLiteStore
from tests.helpers_postgres import PostgresServer

T = TypeVar("T")


@pytest.fixture
def opened(postgres_url: str) -> Iterator[Callable[[], PostgresStore]]:
    stores: list[PostgresStore] = []

    def _open() -> PostgresStore:
        stores.append(PostgresStore(postgres_url, "postgresql://test"))
        return stores[-1]

    yield _open
    for store in stores:
        store.close()


def _retrying(call: Callable[[], T]) -> T:
    """What server/store_access.py does: the whole call again while it fails busy."""
    for _ in range(200):
        try:
            return call()
        except StorageBusyError:
            continue
    raise AssertionError("still busy after 200 attempts")


# -- reaching the server -------------------------------------------------------------


def test_a_port_nobody_listens_on_says_the_server_cannot_be_reached():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(MemoryOpenError) as caught:
        PostgresStore(f"postgresql://someone@127.0.0.1:{port}/db", f"postgresql://someone@127.0.0.1:{port}/db")
    assert "cannot be reached" in str(caught.value)
    assert "host and port" in str(caught.value)


def test_a_database_that_does_not_exist_says_so_and_how_to_create_it(postgres_server: PostgresServer):
    url = postgres_server.database_url("no_such_memory")
    with pytest.raises(MemoryOpenError) as caught:
        PostgresStore(url, "postgresql://x/no_such_memory")
    assert "no such database" in str(caught.value)
    assert "CREATE DATABASE" in str(caught.value)


# -- the schema ------------------------------------------------------------------------


def test_two_servers_starting_at_once_on_an_empty_database_migrate_it_once(postgres_url: str):
    start = threading.Barrier(4)

    def open_one() -> PostgresStore:
        start.wait()
        return PostgresStore(postgres_url, "postgresql://test")

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: open_one(), range(4)))
    try:
        with psycopg.connect(postgres_url) as conn:
            versions = conn.execute("SELECT version FROM graphmem_schema ORDER BY version").fetchall()
        # Each migration applied once, not once per server.
        assert versions == [(number,) for number in range(1, SCHEMA_VERSION + 1)]
        with stores[0].write():
            stores[0].insert_entities([Entity("a", "t")])
        with stores[3].read():
            assert stores[3].existing_names(["a"]) == {"a"}
    finally:
        for store in stores:
            store.close()


def test_a_database_a_newer_graphmem_wrote_is_refused(opened: Callable[[], PostgresStore], postgres_url: str):
    opened().close()
    with psycopg.connect(postgres_url) as conn:
        conn.execute("INSERT INTO graphmem_schema (version) VALUES (999)")
    with pytest.raises(SchemaVersionError) as caught:
        opened()
    assert "upgrade graphmem" in str(caught.value)


# -- many writers ------------------------------------------------------------------------


def test_writers_in_threads_on_the_same_entities_lose_nothing_and_duplicate_nothing(
    opened: Callable[[], PostgresStore],
):
    writers, rounds = 4, 15
    stores = [opened() for _ in range(writers)]
    start = threading.Barrier(writers)

    def work(index: int) -> None:
        graph = KnowledgeGraph(stores[index])
        start.wait()
        for step in range(rounds):
            # Every writer creates the same entities and relations and adds to the same ones.
            other, fact = f"e{step % 3}", f"w{index} s{step}"
            _retrying(lambda other=other: graph.create_entities([Entity("shared", "t"), Entity(other, "t")]))
            _retrying(lambda other=other: graph.create_relations([Relation("shared", other, "r")]))
            _retrying(lambda fact=fact: graph.add_observations([ObservationAddition("shared", (fact,))]))

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(work, range(writers)))
    store = opened()
    with store.read():
        entities = list(store.iter_entities())
        relations = list(store.iter_relations())
        counts = store.counts()
    assert sorted(entity.name for entity in entities) == ["e0", "e1", "e2", "shared"]
    shared = next(entity for entity in entities if entity.name == "shared")
    assert sorted(shared.observations) == sorted(f"w{i} s{s}" for i in range(writers) for s in range(rounds))
    assert len(relations) == 3
    assert counts.entities == 4 and counts.relations == 3 and counts.observations == writers * rounds
    assert store.integrity_problems() == []


def test_writers_locking_two_entities_in_opposite_orders_get_storage_busy_not_a_driver_error(
    opened: Callable[[], PostgresStore],
):
    first, second = opened(), opened()
    with first.write():
        first.insert_entities([Entity("a", "t"), Entity("b", "t")])
    holding = threading.Barrier(2)
    outcomes: list[str] = []

    def lock_in_order(store: PostgresStore, names: list[str]) -> None:
        try:
            with store.write():
                store.observations_of(names[0])
                holding.wait()
                store.observations_of(names[1])  # one of the two waits for the other: a deadlock
            outcomes.append("committed")
        except StorageBusyError:
            outcomes.append("busy")

    threads = [
        threading.Thread(target=lock_in_order, args=(first, ["a", "b"])),
        threading.Thread(target=lock_in_order, args=(second, ["b", "a"])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["busy", "committed"]


def test_a_lock_held_past_the_wait_is_storage_busy_and_changes_nothing(opened: Callable[[], PostgresStore]):
    holder, waiter = opened(), opened()
    with holder.write():
        holder.insert_entities([Entity("a", "t")])
    waiter.wait_for_locks(0.2)
    with holder.write():
        holder.observations_of("a")  # holds a's lock until this block ends
        with pytest.raises(StorageBusyError), waiter.write():
            waiter.append_observations("a", ["too late"])
    with waiter.read():
        assert waiter.observations_of("a") == []
    assert waiter.committed_writes() == 0


def test_a_serialization_failure_is_storage_busy(postgres_url: str):
    with psycopg.connect(postgres_url, autocommit=True) as setup:
        setup.execute("CREATE TABLE t (id int PRIMARY KEY, n int)")
        setup.execute("INSERT INTO t VALUES (1, 0)")
    with psycopg.connect(postgres_url) as first, psycopg.connect(postgres_url) as second:
        for conn in (first, second):
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            conn.execute("SELECT n FROM t").fetchall()
        first.execute("UPDATE t SET n = 1")
        first.commit()
        with pytest.raises(StorageBusyError), map_postgres_errors():
            second.execute("UPDATE t SET n = 2")


def test_a_statement_past_the_time_limit_stops_with_time_limit_error(opened: Callable[[], PostgresStore]):
    store = opened()
    with pytest.raises(TimeLimitError), store.time_limit(0.2), store.read():
        # No store call takes seconds on a small memory: the test makes the statement slow itself.
        store._tx.cursor.execute("SELECT pg_sleep(5)")
    with store.read():
        assert store.counts().entities == 0


def test_version_moves_when_another_server_writes(opened: Callable[[], PostgresStore]):
    mine, theirs = opened(), opened()
    before = mine.version()
    assert mine.version() == before
    with theirs.write():
        theirs.insert_entities([Entity("a", "t")])
    assert mine.version() != before
    assert mine.committed_writes() == 0 and theirs.committed_writes() == 1


# -- the official substring search -----------------------------------------------------------

_TEXTS = [
    "İstanbul",
    "ΟΔΟΣ σοφός",
    "STRAẞE",
    "100% sure",
    "snake_case",
    "back\\slash",
    "a\x00b",
    "\x01\x02",
    "x",
    "\x04\U000f003d",
]


@pytest.mark.parametrize(
    "needle",
    [
        "i̇stanbul",
        "οδος",
        "ς",
        "σ",
        "straße",
        "%",
        "0%",
        "_",
        "e_c",
        "\\",
        "k\\s",
        "\x00",
        "\x02",
        "\x01",
        "\x04",
        "\U000f003d",
    ],
)
def test_the_substring_search_finds_what_javascripts_tolowercase_includes_finds(
    opened: Callable[[], PostgresStore], tmp_path: Path, needle: str
):
    entities = [Entity(f"n{i}", "t", (text,)) for i, text in enumerate(_TEXTS)]
    reference = SQLiteStore(tmp_path / "m.db")
    store = opened()
    try:
        for backend in (store, reference):
            with backend.write():
                backend.insert_entities(entities)
        with store.read(), reference.read():
            assert store.find_text(needle) == reference.find_text(needle)
        # str.lower() is JavaScript's toLowerCase(): final sigma in place, dotted İ as i + U+0307.
        expected = {entity.name for entity in entities if needle in entity.observations[0].lower()}
        with store.read():
            assert set(store.find_text(needle)) == expected
    finally:
        reference.close()


def test_texts_with_lone_surrogates_are_kept_exactly_in_names_facts_and_extra_keys(
    opened: Callable[[], PostgresStore],
):
    store = opened()
    entity = Entity("A\ud800", "t\udfff", ("fact \udbff", "plain"), {"aliases": ["alias \ud800"], "note": "\udc00"})
    with store.write():
        store.insert_entities([entity])
        store.insert_relations([Relation("A\ud800", "B\udc01", "knows \ud801")])
    again = opened()
    with again.read():
        (back,) = again.get_entities(["A\ud800"])
        assert (back.name, back.entity_type, back.observations, back.extra) == (
            entity.name,
            entity.entity_type,
            entity.observations,
            entity.extra,
        )
        assert again.resolve_names(["alias \ud800"]) == {"alias \ud800": "A\ud800"}
        assert [r.key for r in again.iter_relations()] == [("A\ud800", "B\udc01", "knows \ud801")]
        # As JavaScript's includes() finds them, and nowhere else.
        assert set(again.find_text("\udbff")) == {"A\ud800"}
        assert again.find_text("\ud83d") == {}


def test_a_bulk_insert_by_copy_is_found_at_once(opened: Callable[[], PostgresStore]):
    store = opened()
    with store.write(), store.bulk_insert():
        store.insert_entities([Entity(f"entity-{i}", "thing", (f"fact {i}", "shared")) for i in range(500)])
        store.insert_relations([Relation(f"entity-{i}", f"entity-{i + 1}", "next") for i in range(499)])
    with store.read():
        assert store.counts().entities == 500 and store.counts().relations == 499
        assert set(store.find_text("fact 49")) == {"entity-49", *(f"entity-{i}" for i in range(490, 500))}
    assert store.integrity_problems() == []


def test_a_batch_larger_than_the_servers_lock_table_is_written_whole(opened: Callable[[], PostgresStore]):
    # Locked name by name, 40,000 names and keys overflowed the lock table ("out of shared memory").
    store = opened()
    with store.write():
        store.insert_entities([Entity(f"e{i}", "t") for i in range(20_000)])
        store.insert_relations([Relation(f"e{i}", f"e{i + 1}", "next") for i in range(20_000)])
    with store.read():
        assert store.counts().entities == 20_000 and store.counts().relations == 20_000


def test_connections_the_server_closed_meanwhile_are_replaced_and_the_next_calls_succeed(opened, postgres_url):
    store = opened()
    with store.write():
        store.insert_entities([Entity("Ada", "person", ("writes programs",))])
    # Three connections in the pool at once, then all of them ended by the server (a restart,
    # an idle timeout, a proxy closing them).
    together = threading.Barrier(3)

    def backend() -> int:
        with store.read():
            ((pid,),) = store._rows("SELECT pg_backend_pid()")
            together.wait(timeout=10)
        return int(pid)

    with ThreadPoolExecutor(3) as pool:
        pids = set(pool.map(lambda _: backend(), range(3)))
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
    assert store.version() is not None
    with store.read():
        assert store.get_entities(["Ada"])[0].observations == ("writes programs",)
    with store.write():
        store.append_observations("Ada", ["reads proofs"])
    with store.read():
        assert store.observations_of("Ada") == ["writes programs", "reads proofs"]


# -- what the review found -------------------------------------------------------------------


def test_a_database_holding_other_tables_and_no_memory_is_refused_and_left_as_it_was(postgres_url: str):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(MemoryOpenError) as caught:
        PostgresStore(postgres_url, "postgresql://x/accounts")
    assert "holds 1 other tables and no graphmem memory" in str(caught.value)
    assert "Check the URL" in str(caught.value)
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
    assert tables == [("invoices",)]


def test_a_pool_that_cannot_lend_a_connection_in_time_says_nothing_was_changed():
    from psycopg_pool import PoolTimeout

    with pytest.raises(StorageError) as caught, map_postgres_errors():
        raise PoolTimeout("couldn't get a connection after 30.00 sec")
    assert "nothing was changed" in str(caught.value)
    assert "may not have been saved" not in str(caught.value)


def test_a_write_waits_for_the_state_row_another_writer_is_committing_instead_of_failing(postgres_url: str):
    store = PostgresStore(postgres_url, "postgresql://test")
    # The call's own lock wait is short, as a server sets it: the state row, the last lock of
    # every write, held by another writer's commit, must not fail the call for all that.
    store.wait_for_locks(0.005)
    try:
        with psycopg.connect(postgres_url) as other:
            other.execute("UPDATE graphmem_state SET writes = writes WHERE id = 1")  # held until commit
            threading.Timer(0.3, other.commit).start()
            with store.write():
                store.insert_entities([Entity("fast", "t")])
        with store.read():
            assert store.existing_names(["fast"]) == {"fast"}
    finally:
        store.close()
