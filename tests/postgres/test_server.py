"""The throw-away PostgreSQL server the tests start: what the backend's tests rely on."""

from __future__ import annotations

import psycopg
import pytest

from tests.helpers_postgres import EXTERNAL_URL_VARIABLE, OLDEST_SUPPORTED, PostgresServer


def test_a_test_database_offers_pgvector_and_pg_trgm(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        available = {row[0] for row in conn.execute("SELECT name FROM pg_available_extensions")}
    assert {"vector", "pg_trgm"} <= available


def test_each_test_database_is_new_and_empty(postgres_server: PostgresServer) -> None:
    first, second = postgres_server.create_database(), postgres_server.create_database()
    try:
        assert first != second
        with psycopg.connect(first) as conn:
            conn.execute("CREATE TABLE left_behind (id int)")
        with psycopg.connect(second) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        assert tables == (0,)
    finally:
        postgres_server.drop_database(first)
        postgres_server.drop_database(second)


def test_the_started_server_listens_on_loopback_only(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    if os.environ.get(EXTERNAL_URL_VARIABLE):
        pytest.skip("an external server is in use; its addresses are its owner's choice")
    with psycopg.connect(postgres_server.url) as conn:
        (addresses,) = conn.execute("SHOW listen_addresses").fetchone() or ("",)
    assert addresses == "127.0.0.1"


def test_pgbouncer_passes_a_test_database_through_in_transaction_mode(pgbouncer_server: PostgresServer) -> None:
    url = pgbouncer_server.create_database()
    try:
        with psycopg.connect(url, prepare_threshold=None, autocommit=True) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == (url.rsplit("/", 1)[1],)
    finally:
        pgbouncer_server.drop_database(url)


def test_the_oldest_supported_server_can_be_had_and_is_that_version(oldest_postgres_server: PostgresServer) -> None:
    with psycopg.connect(oldest_postgres_server.url) as conn:
        (version,) = conn.execute("SHOW server_version_num").fetchone() or ("0",)
    assert int(version) // 10000 == OLDEST_SUPPORTED
