"""Answers of read tools kept while the memory is unchanged (tools/answers.py).

What a user would check: a repeated read gives the same answer, and never an old one,
whether the memory changed through this server, through another process writing the
same file, or not at all.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server import build_server
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS, ToolContext
from graphmem.tools.answers import AnswerCache

TOOLS = {spec.name: spec for spec in ALL_TOOLS}


def _run(cache: AnswerCache, ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> Any:
    spec = TOOLS[tool]
    return cache.run(spec, ctx, spec.arguments.model_validate(arguments))


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """Kept answers hold on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


@pytest.fixture
def ctx(graph: KnowledgeGraph) -> ToolContext:
    graph.create_entities([Entity("Alice", "person", ("likes tea",)), Entity("Bob", "person", ("likes coffee",))])
    return ToolContext(graph, response_budget=25_000)


def test_the_reusable_tools_are_the_official_reads_and_query_nodes() -> None:
    reusable = {spec.name for spec in ALL_TOOLS if spec.reusable}
    assert reusable == {"read_graph", "search_nodes", "open_nodes", "query_nodes"}
    # Each of them only reads.
    assert all(spec.annotations.read_only_hint for spec in ALL_TOOLS if spec.reusable)


def test_a_repeated_read_is_the_kept_answer(ctx: ToolContext) -> None:
    cache = AnswerCache()
    first = _run(cache, ctx, "search_nodes", {"query": "likes"})
    assert _run(cache, ctx, "search_nodes", {"query": "likes"}) is first
    # Other arguments are another answer.
    other = _run(cache, ctx, "search_nodes", {"query": "tea"})
    assert other is not first
    assert [e["name"] for e in other.structured["entities"]] == ["Alice"]


def test_a_write_through_the_graph_drops_every_kept_answer(ctx: ToolContext) -> None:
    cache = AnswerCache()
    before = _run(cache, ctx, "search_nodes", {"query": "likes"})
    _run(cache, ctx, "read_graph", {})
    ctx.graph.create_entities([Entity("Carol", "person", ("likes milk",))])
    after = _run(cache, ctx, "search_nodes", {"query": "likes"})
    assert after is not before
    assert [e["name"] for e in after.structured["entities"]] == ["Alice", "Bob", "Carol"]
    assert "Carol" in _run(cache, ctx, "read_graph", {}).text


def test_a_write_by_another_process_drops_every_kept_answer(ctx: ToolContext, settings: Settings) -> None:
    cache = AnswerCache()
    assert _run(cache, ctx, "open_nodes", {"names": ["Dave"]}).structured["entities"] == []
    # A separate process writes the same memory: only the store's version can tell (SQLite's
    # data_version, PostgreSQL's write counter, a JSONL file's stamp).
    script = (
        "import sys\n"
        "from graphmem.config import Settings\n"
        "from graphmem.domain.graph import KnowledgeGraph\n"
        "from graphmem.core.models import Entity\n"
        "from graphmem.storage import open_store\n"
        "store = open_store(Settings.from_env({}, memory_file=sys.argv[1], semantic=False))\n"
        "KnowledgeGraph(store).create_entities([Entity('Dave', 'person', ('new',))])\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, settings.database_url or str(settings.memory_path)], check=True)
    answer = _run(cache, ctx, "open_nodes", {"names": ["Dave"]})
    assert [e["name"] for e in answer.structured["entities"]] == ["Dave"]


def test_writes_and_errors_are_never_kept(ctx: ToolContext) -> None:
    cache = AnswerCache()
    created = _run(
        cache, ctx, "create_entities", {"entities": [{"name": "Eve", "entityType": "person", "observations": []}]}
    )
    assert created.changed
    assert cache.stats()["answers"] == 0
    # A second identical create is not answered from a cache: Eve exists now, so it is skipped.
    again = _run(
        cache, ctx, "create_entities", {"entities": [{"name": "Eve", "entityType": "person", "observations": []}]}
    )
    assert again.structured["entities"] == []


def test_the_cache_keeps_at_most_its_count_and_its_bytes(ctx: ToolContext) -> None:
    cache = AnswerCache(max_answers=2)
    first = _run(cache, ctx, "open_nodes", {"names": ["Alice"]})
    _run(cache, ctx, "open_nodes", {"names": ["Bob"]})
    _run(cache, ctx, "open_nodes", {"names": ["Alice", "Bob"]})
    assert cache.stats()["answers"] == 2
    # The oldest went first.
    assert _run(cache, ctx, "open_nodes", {"names": ["Alice"]}) is not first

    sizing = AnswerCache()
    _run(sizing, ctx, "open_nodes", {"names": ["Alice"]})
    one = sizing.stats()["bytes"]
    assert one > 0
    # Room for one answer and a half: the second pushes the first out.
    roomy = AnswerCache(max_bytes=one * 3 // 2)
    _run(roomy, ctx, "open_nodes", {"names": ["Alice"]})
    _run(roomy, ctx, "open_nodes", {"names": ["Bob"]})
    assert roomy.stats()["answers"] == 1
    assert roomy.stats()["bytes"] <= one * 3 // 2

    tiny = AnswerCache(max_bytes=10)
    _run(tiny, ctx, "read_graph", {})
    assert tiny.stats() == {"answers": 0, "bytes": 0}


def test_a_jsonl_memory_keeps_answers_until_its_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    store = open_store(Settings(memory_path=path))
    try:
        graph = KnowledgeGraph(store)
        graph.create_entities([Entity("Alice", "person", ())])
        ctx = ToolContext(graph)
        cache = AnswerCache()
        first = _run(cache, ctx, "read_graph", {})
        assert _run(cache, ctx, "read_graph", {}) is first
        # Another writer (the official server, say) rewrites the file in place.
        line = '{"type":"entity","name":"Bob","entityType":"person","observations":[]}'
        path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n" + line + "\n", encoding="utf-8")
        names = [entity["name"] for entity in _run(cache, ctx, "read_graph", {}).structured["entities"]]
        assert names == ["Alice", "Bob"]
        graph.create_entities([Entity("Carol", "person", ())])
        assert "Carol" in _run(cache, ctx, "read_graph", {}).text
    finally:
        store.close()


def test_no_version_inside_a_transaction(graph: KnowledgeGraph) -> None:
    assert graph.version() is not None
    with graph.store.read():
        assert graph.store.version() is None
    with graph.store.write():
        assert graph.store.version() is None


@pytest.mark.anyio
async def test_through_the_server_a_read_after_a_write_shows_the_write(settings: Settings) -> None:
    async with Client(build_server(dataclasses.replace(settings, response_budget=25_000)), mode="legacy") as client:
        empty = await client.call_tool("read_graph", {})
        assert json.loads(empty.content[0].text) == {"entities": [], "relations": []}
        assert (await client.call_tool("read_graph", {})).structured_content == empty.structured_content
        entity = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}
        await client.call_tool("create_entities", {"entities": [entity]})
        for _ in range(2):
            answer = await client.call_tool("read_graph", {})
            assert answer.structured_content == {"entities": [entity], "relations": []}
            found = await client.call_tool("search_nodes", {"query": "tea"})
            assert [e["name"] for e in found.structured_content["entities"]] == ["Alice"]
        await client.call_tool("delete_entities", {"entityNames": ["Alice"]})
        assert (await client.call_tool("search_nodes", {"query": "tea"})).structured_content["entities"] == []
