"""The call time limit: a call that runs too long is stopped, rolled back, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from graphmem.config import DEFAULT_CALL_TIME_LIMIT, Settings
from graphmem.core.errors import ConfigError, TimeLimitError
from graphmem.core.models import Entity
from graphmem.server import build_server
from graphmem.storage.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio

# Far shorter than any real call: the first clock check of a statement stops it.
NO_TIME = 1e-9


def _many(count: int) -> list[Entity]:
    return [Entity(f"entity {i}", "thing", (f"fact {i} one", f"fact {i} two", f"fact {i} three")) for i in range(count)]


def test_a_store_stops_work_past_its_time_limit_and_rolls_it_back(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with pytest.raises(TimeLimitError, match="time limit"), store.time_limit(NO_TIME), store.write():
        store.insert_entities(_many(2000))
    with store.read():
        assert store.counts().entities == 0
    # The limit ends with its block: the same work without it completes.
    with store.write():
        store.insert_entities(_many(2000))
    with store.read():
        assert store.counts().entities == 2000
    store.close()


def test_a_store_with_no_limit_never_interrupts(tmp_path: Path):
    store = SQLiteStore(tmp_path / "memory.db")
    with store.time_limit(0), store.write():
        store.insert_entities(_many(500))
    with store.read():
        assert store.counts().entities == 500
    store.close()


def _arguments(count: int) -> dict[str, object]:
    return {
        "entities": [
            {"name": f"entity {i}", "entityType": "thing", "observations": [f"fact {i} one", f"fact {i} two"]}
            for i in range(count)
        ]
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_tool_call_past_the_time_limit_is_a_tool_error_and_changes_nothing(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
):
    memory = request.getfixturevalue("postgres_url") if backend == "postgres" else str(tmp_path / "memory.db")
    settings = Settings.from_env({}, memory_file=memory, call_time_limit=NO_TIME)
    async with Client(build_server(settings), mode="legacy") as client:
        result = await client.call_tool("create_entities", _arguments(1000))
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "time limit" in text and "nothing was changed" in text
        graph = await client.call_tool("read_graph", {"mode": "names"})
    assert graph.structured_content is not None
    assert graph.structured_content["totalEntities"] == 0


async def test_compact_is_not_held_to_the_time_limit(tmp_path: Path):
    memory = tmp_path / "memory.db"
    store = SQLiteStore(memory)
    with store.write():
        store.insert_entities(_many(2000))
    store.close()
    settings = Settings.from_env({}, memory_file=str(memory), call_time_limit=NO_TIME, toolset="all")
    async with Client(build_server(settings), mode="legacy") as client:
        result = await client.call_tool("compact", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None and result.structured_content["entities"] == 2000


def test_the_time_limit_comes_from_the_flag_the_environment_or_the_default(tmp_path: Path):
    memory = str(tmp_path / "m.db")
    assert Settings.from_env({}, memory_file=memory).call_time_limit == DEFAULT_CALL_TIME_LIMIT
    assert Settings.from_env({"GRAPHMEM_CALL_TIME_LIMIT": "2.5"}, memory_file=memory).call_time_limit == 2.5
    assert Settings.from_env({"GRAPHMEM_CALL_TIME_LIMIT": "0"}, memory_file=memory).call_time_limit == 0
    flag_wins = Settings.from_env({"GRAPHMEM_CALL_TIME_LIMIT": "2.5"}, memory_file=memory, call_time_limit=9)
    assert flag_wins.call_time_limit == 9


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_time_limit_that_is_not_a_number_of_seconds_is_refused_naming_the_variable(tmp_path: Path, value: str):
    with pytest.raises(ConfigError, match="GRAPHMEM_CALL_TIME_LIMIT"):
        Settings.from_env({"GRAPHMEM_CALL_TIME_LIMIT": value}, memory_file=str(tmp_path / "m.db"))
