"""Shared fixtures: real SQLite files in a temporary folder, and the in-process MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server import build_server
from graphmem.storage import open_store
from tests.helpers_clients import SLOW_TRANSPORTS, TRANSPORTS, Connect, SharedServers
from tests.helpers_npm import download_notice
from tests.helpers_postgres import (
    OLDEST_SUPPORTED,
    PostgresServer,
    pgbouncer_unavailable,
    postgres_unavailable,
    running_pgbouncer,
    running_postgres,
    running_system_postgres,
    system_postgres,
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Say before any test runs what npm packages this run will download, and where they are kept.

    Written by the terminal reporter, so it shows with -q too; parallel workers stay quiet.
    """
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):
        return
    for line in download_notice():
        reporter.write_line(line)


_POSTGRES_FIXTURES = {"postgres_server", "postgres_url", "oldest_postgres_server", "pgbouncer_server"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `postgres` every test that uses a PostgreSQL server: through a fixture, or through a
    backend parameter that names one (`any_backend_settings`, the store contract suite)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if _POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())) or any(
            isinstance(value, str) and value.startswith("postgres") for value in params.values()
        ):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module scope, so that a module-scoped async fixture (`served`) can hold servers for its tests.
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(memory_path=tmp_path / "memory.db")


BACKENDS = ("sqlite", "jsonl", "postgres")
"""Every backend: the tool tests that are not about a file run on each (see `any_backend_settings`)."""


@pytest.fixture(params=BACKENDS)
def any_backend_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings for a new memory on each backend in turn: a SQLite file, the official JSONL file,
    and a PostgreSQL memory on the test server (skipped, with the reason, where none can be had).

    A module whose tests hold on every backend overrides `settings` with it."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return Settings(database_url=url)
    return Settings(memory_path=tmp_path / ("memory.jsonl" if request.param == "jsonl" else "memory.db"))


@pytest.fixture
def graph(settings: Settings) -> Iterator[KnowledgeGraph]:
    store = open_store(settings)
    yield KnowledgeGraph(store, strict=settings.strict, limits=settings.limits)
    store.close()


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    # mode="legacy": the initialize handshake that Claude Desktop, Cursor and the
    # official server use.
    async with Client(build_server(settings), mode="legacy") as connected:
        yield connected


_TRANSPORT_PARAMS = [
    pytest.param(name, marks=pytest.mark.slow) if name in SLOW_TRANSPORTS else name for name in TRANSPORTS
]


@pytest.fixture(params=_TRANSPORT_PARAMS)
def connect(request: pytest.FixtureRequest) -> Connect:
    """Start a server over each transport in turn: `async with connect(memory, Serve(...)) as client`."""
    transport: Connect = TRANSPORTS[request.param]
    return transport


@pytest.fixture(scope="module", params=_TRANSPORT_PARAMS)
async def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SharedServers]:
    """Servers over each transport in turn, shared by the module's tests: `async with served.session() as client`."""
    async with anyio.create_task_group() as tasks:
        servers = SharedServers(request.param, tmp_path_factory.mktemp("served"), tasks)
        yield servers
        servers.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throw-away PostgreSQL server per test process (see tests/helpers_postgres.py)."""
    reason = postgres_unavailable()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server can be had here: {reason}")
    with running_postgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty memory of the test's own (a schema), dropped after it."""
    url = postgres_server.create_memory()
    yield url
    postgres_server.drop_memory(url)


@pytest.fixture(scope="session")
def oldest_postgres_server() -> Iterator[PostgresServer]:
    """A throw-away server of the oldest PostgreSQL version graphmem supports (the system's)."""
    if system_postgres() is None:
        pytest.skip(
            f"PostgreSQL {OLDEST_SUPPORTED} is not installed here (apt-get install postgresql-{OLDEST_SUPPORTED}; "
            "./scripts/test does so where it can)"
        )
    with running_system_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def pgbouncer_server(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """PgBouncer in transaction mode in front of the test server: databases made through it."""
    reason = pgbouncer_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with running_pgbouncer(postgres_server) as pooled:
        yield pooled
