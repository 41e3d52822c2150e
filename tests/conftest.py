"""Shared fixtures: real SQLite files in a temporary folder, and the in-process MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server import build_server
from graphmem.storage import open_store
from tests.helpers_clients import SLOW_TRANSPORTS, TRANSPORTS, Connect
from tests.helpers_npm import download_notice


def pytest_sessionstart(session: pytest.Session) -> None:
    """Say before any test runs what npm packages this run will download, and where they are kept.

    Written by the terminal reporter, so it shows with -q too; parallel workers stay quiet.
    """
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):
        return
    for line in download_notice():
        reporter.write_line(line)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(memory_path=tmp_path / "memory.db")


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


@pytest.fixture(
    params=[pytest.param(name, marks=pytest.mark.slow) if name in SLOW_TRANSPORTS else name for name in TRANSPORTS]
)
def connect(request: pytest.FixtureRequest) -> Connect:
    """Start a server over each transport in turn: `async with connect(memory, Serve(...)) as client`."""
    transport: Connect = TRANSPORTS[request.param]
    return transport
