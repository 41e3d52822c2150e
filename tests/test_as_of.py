"""`asOf` (domain/as_of.py): every read as the memory stood at a time, on every backend, leaving
nothing behind; as a property, the memory as of each step of a random sequence of writes is what
a snapshot taken at that step holds."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from contextlib import suppress
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client

from graphmem.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion, Relation
from graphmem.domain.as_of import as_of
from graphmem.domain.diff import diff_memory
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import ChangeQuery, list_changes
from graphmem.server import build_server
from graphmem.storage import open_store
from tests.test_cli import run
from tests.test_undo import _WRITES, _try_write, snapshot


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


def _now(graph: KnowledgeGraph) -> str:
    """The time of the newest change: asOf it, the memory as it is now."""
    time.sleep(0.003)  # the next change gets a later millisecond
    return list_changes(graph, ChangeQuery(limit=1)).changes[0].at


def test_a_read_as_of_a_time_sees_the_memory_as_it_stood_then_and_leaves_nothing_behind(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("wrote a program",)), Entity("Acme", "company")])
    first = _now(graph)
    then = snapshot(graph)
    graph.add_observations([ObservationAddition("Ada", ("lives on the moon",))])
    graph.delete_entities(["Acme"])
    graph.create_entities([Entity("Moon Base", "place")])
    now = snapshot(graph)
    changes = list_changes(graph, ChangeQuery(limit=100)).changes
    assert as_of(graph, first, lambda: snapshot(graph)) == then
    assert snapshot(graph) == now  # rolled back: the memory as it is
    assert list_changes(graph, ChangeQuery(limit=100)).changes == changes  # and nothing recorded
    assert as_of(graph, "2000-01-01", lambda: snapshot(graph)) == ({}, set())
    with pytest.raises(InvalidInputError, match="asOf.*not a time"):
        as_of(graph, "yesterday", lambda: None)
    with pytest.raises(InvalidInputError, match="asOf.*still to come"):
        as_of(graph, "2999-01-01", lambda: None)


@pytest.mark.anyio
async def test_the_reads_take_as_of_over_the_real_client_and_the_writes_refuse_it(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        ada = {"name": "Ada", "entityType": "person", "observations": ["wrote a program"]}
        await client.call_tool("create_entities", {"entities": [ada]})
        (created,) = (await client.call_tool("list_changes", {})).structured_content["changes"]
        time.sleep(0.003)
        moon = {"entityName": "Ada", "contents": ["lives on the moon"]}
        await client.call_tool("add_observations", {"observations": [moon]})
        past = {"asOf": created["at"]}
        opened = await client.call_tool("open_nodes", {"names": ["Ada"], **past})
        assert opened.structured_content["entities"] == [ada]
        found = await client.call_tool("search_nodes", {"query": "moon", **past})
        assert found.structured_content["entities"] == []
        whole = await client.call_tool("read_graph", past)
        assert whole.structured_content["entities"] == [ada]
        listed = await client.call_tool("query_nodes", {"entityType": "person", **past})
        assert not listed.is_error
        # The answers kept for reads are of the memory as it is, never of a past one.
        now = await client.call_tool("open_nodes", {"names": ["Ada"]})
        assert now.structured_content["entities"][0]["observations"] == ["wrote a program", "lives on the moon"]
        refused = await client.call_tool("create_entities", {"entities": [ada], **past})
        assert refused.is_error and "asOf: is for reads" in refused.content[0].text
        wrong = await client.call_tool("read_graph", {"asOf": "last week"})
        assert wrong.is_error and "ISO 8601" in wrong.content[0].text


@pytest.mark.parametrize("backend", ["memory.db", "memory.jsonl"])
@examples(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(_WRITES, min_size=1, max_size=8))
def test_the_memory_as_of_each_step_is_the_snapshot_taken_then(backend: str, writes: list[tuple[str, str, str]]):
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Settings(memory_path=Path(folder) / backend, semantic=False))
        graph = KnowledgeGraph(store)
        try:
            steps = []
            for write in writes:
                with suppress(InvalidInputError):
                    _try_write(graph, write)
                changes = list_changes(graph, ChangeQuery(limit=1)).changes
                if changes:
                    steps.append((_now(graph), snapshot(graph)))
            for moment, then in steps:
                assert as_of(graph, moment, lambda: snapshot(graph)) == then
        finally:
            store.close()


def test_a_diff_says_what_changed_between_two_times(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("wrote a program",)), Entity("Acme", "company")])
    graph.create_relations([Relation("Ada", "Acme", "works_at")])
    start = _now(graph)
    graph.add_observations([ObservationAddition("Ada", ("lives in Oslo",))])
    graph.delete_observations([ObservationDeletion("Ada", ("wrote a program",))])
    graph.delete_entities(["Acme"])
    graph.create_entities([Entity("Bob", "person")])
    graph.create_relations([Relation("Ada", "Bob", "knows")])
    middle = _now(graph)
    graph.create_entities([Entity("Cy", "person")])
    diff = diff_memory(graph, start, middle)
    assert diff.changes == 5
    assert [e.name for e in diff.added] == ["Bob"] and [e.name for e in diff.removed] == ["Acme"]
    (ada,) = diff.changed
    assert (ada.name, ada.added, ada.removed) == ("Ada", ["lives in Oslo"], ["wrote a program"])
    assert [r.key for r in diff.related] == [("Ada", "Bob", "knows")]
    assert [r.key for r in diff.unrelated] == [("Ada", "Acme", "works_at")]
    assert [e.name for e in diff_memory(graph, middle).added] == ["Cy"]  # until now
    with pytest.raises(InvalidInputError, match="until.*before since"):
        diff_memory(graph, middle, start)


@pytest.mark.anyio
async def test_diff_memory_answers_over_the_real_client(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        ada = {"name": "Ada", "entityType": "person", "observations": []}
        await client.call_tool("create_entities", {"entities": [ada]})
        answer = await client.call_tool("diff_memory", {"since": "2000-01-01"})
        assert answer.structured_content["addedEntities"] == {"items": ["Ada"], "total": 1}
        assert answer.structured_content["removedEntities"] == {"items": [], "total": 0}
        refused = await client.call_tool("diff_memory", {"since": "whenever"})
        assert refused.is_error and "since" in refused.content[0].text


def test_graphmem_diff_prints_what_changed(tmp_path: Path):
    memory = tmp_path / "memory.db"
    graph = KnowledgeGraph(open_store(Settings(memory_path=memory, semantic=False)))
    try:
        graph.create_entities([Entity("Ada", "person", ("wrote a program",))])
        start = _now(graph)
        graph.add_observations([ObservationAddition("Ada", ("lives in Oslo",))])
        graph.create_relations([Relation("Ada", "Babbage", "knows")])
    finally:
        graph.store.close()
    output = run("diff", "--memory-file", memory, "--since", start).output
    assert output.splitlines()[1:] == ["~ Ada", "    + lives in Oslo", "+ Ada -knows-> Babbage"]
    assert output.startswith(f"From {start} to ") and output.splitlines()[0].endswith(": 2 changes.")
