"""Undo (domain/undo.py): changes of the log taken back as one new change, refused by name when a
later change depends on them; on every backend, and as a property over random sequences."""

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
from graphmem.core.projects import Scope
from graphmem.domain.as_of import as_of
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import ChangeQuery, describe, list_changes
from graphmem.domain.maintenance import EntityUpdate, update_entities
from graphmem.domain.undo import UndoAsk, undo
from graphmem.server import build_server
from graphmem.storage import open_store
from tests.test_cli import OFFICIAL, run


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


def snapshot(graph: KnowledgeGraph) -> tuple[dict[str, tuple[str, frozenset[str]]], set[tuple[str, str, str]]]:
    """What a person reads of the memory: each entity's type and facts, and the relations."""
    read = graph.read_graph()
    entities = {e.name: (e.entity_type, frozenset(e.observations)) for e in read.entities}
    return entities, {relation.key for relation in read.relations}


def _latest(graph: KnowledgeGraph) -> int:
    return list_changes(graph, ChangeQuery(limit=1)).changes[0].seq


def _start(graph: KnowledgeGraph) -> None:
    graph.create_entities([Entity("Ada", "person", ("wrote a program",)), Entity("Acme", "company", ("makes anvils",))])
    graph.create_relations([Relation("Ada", "Acme", "works_at")])


def test_a_week_of_wrong_writes_is_undone_in_one_step(graph: KnowledgeGraph):
    _start(graph)
    before = snapshot(graph)
    start = list_changes(graph, ChangeQuery(limit=1)).changes[0].at
    with graph.authored_by("agent"):
        graph.add_observations([ObservationAddition("Ada", ("lives on the moon",))])
        graph.create_entities([Entity("Moon Base", "place", ("Ada's home",))])
        graph.create_relations([Relation("Ada", "Moon Base", "lives_in")])
        graph.delete_observations([ObservationDeletion("Ada", ("wrote a program",))])
        update_entities(graph, [EntityUpdate("Acme", new_name="Acme Corp", entity_type="corporation")])
        graph.delete_entities(["Acme Corp"])
    assert snapshot(graph) != before
    # Every change since the start, the agent's only (the memory's first changes are older).
    outcome = undo(graph, UndoAsk(since=start, author="agent"))
    assert len(outcome.undone) == 6
    assert snapshot(graph) == before
    newest = list_changes(graph, ChangeQuery(limit=1)).changes[0]
    assert newest.via == "undo_changes"
    assert newest.ops[0] == {"op": "undo", "changes": [change.seq for change in outcome.undone]}
    assert describe(newest)[0].startswith(f"undid changes {outcome.undone[0].seq}, ")


def test_undoing_a_value_that_begins_later_leaves_the_current_one_as_it_was(graph: KnowledgeGraph):
    """The planned value had set when the current one ends: taken back, it ends no more."""
    graph.create_entities([Entity("Ada", "person")])
    graph.add_observations([ObservationAddition("Ada", ("Lives in Paris",), (), "home")])
    with graph.store.read():
        (before,) = graph.store.get_entities(["Ada"])
    graph.add_observations([ObservationAddition("Ada", ("Lives in Berlin",), (), "home", "2099-01-01")])
    undo(graph, UndoAsk(changes=(_latest(graph),)))
    with graph.store.read():
        (after,) = graph.store.get_entities(["Ada"])
    assert after.observations == ("Lives in Paris",)
    assert after.extra["observationMeta"] == before.extra["observationMeta"]  # type: ignore[index]


def test_an_undo_is_a_change_like_any_other_and_can_be_undone(graph: KnowledgeGraph):
    _start(graph)
    graph.add_observations([ObservationAddition("Ada", ("likes tea",))])
    added = _latest(graph)
    with_tea = snapshot(graph)
    undo(graph, UndoAsk(changes=(added,)))
    assert "likes tea" not in snapshot(graph)[0]["Ada"][1]
    undo(graph, UndoAsk(changes=(_latest(graph),)))  # the undo, undone
    assert snapshot(graph) == with_tea


def test_a_change_a_later_one_depends_on_is_refused_by_name_and_undone_with_it(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person")])
    created = _latest(graph)
    graph.add_observations([ObservationAddition("Ada", ("likes tea",))])
    added = _latest(graph)
    before = snapshot(graph)
    with pytest.raises(InvalidInputError, match=rf"change {added} \(graphmem.*added 1 fact to Ada.*undo it too"):
        undo(graph, UndoAsk(changes=(created,)))
    assert snapshot(graph) == before  # refused: nothing changed
    undo(graph, UndoAsk(changes=(created, added)))
    assert snapshot(graph) == ({}, set())


def test_changes_that_touch_different_things_are_undone_apart(graph: KnowledgeGraph):
    _start(graph)
    graph.create_entities([Entity("Bob", "person")])
    graph.create_relations([Relation("Ada", "Bob", "knows")])
    knows = _latest(graph)
    graph.create_relations([Relation("Ada", "Acme", "founded")])  # shares an end with it
    graph.add_observations([ObservationAddition("Bob", ("plays chess",))])  # another fact of another entity
    undo(graph, UndoAsk(changes=(knows,)))
    entities, relations = snapshot(graph)
    assert ("Ada", "Bob", "knows") not in relations and ("Ada", "Acme", "founded") in relations
    assert "plays chess" in entities["Bob"][1]


def test_a_dry_run_says_what_it_would_undo_and_changes_nothing(graph: KnowledgeGraph):
    _start(graph)
    graph.delete_entities(["Acme"])
    deleted = _latest(graph)
    before = snapshot(graph)
    outcome = undo(graph, UndoAsk(changes=(deleted,), dry_run=True))
    assert outcome.dry_run and outcome.lines == [
        f"change {deleted} (graphmem): removed the relation Ada -works_at-> Acme",
        f"change {deleted} (graphmem): deleted Acme (with 1 fact)",
    ]
    assert snapshot(graph) == before and _latest(graph) == deleted
    undo(graph, UndoAsk(changes=(deleted,)))
    assert snapshot(graph)[0]["Acme"] == ("company", frozenset({"makes anvils"}))
    assert ("Ada", "Acme", "works_at") in snapshot(graph)[1]


def test_bad_asks_are_refused_saying_what_to_send(graph: KnowledgeGraph):
    _start(graph)
    with pytest.raises(InvalidInputError, match="one of the two"):
        undo(graph, UndoAsk())
    with pytest.raises(InvalidInputError, match="one of the two"):
        undo(graph, UndoAsk(changes=(1,), since="2026-01-01"))
    with pytest.raises(InvalidInputError, match="no change 999"):
        undo(graph, UndoAsk(changes=(999,)))
    with pytest.raises(InvalidInputError, match="not a time"):
        undo(graph, UndoAsk(since="last week"))
    with pytest.raises(InvalidInputError, match="finds no change"):
        undo(graph, UndoAsk(since="2999-01-01"))


def test_in_a_project_a_change_that_touched_another_is_not_undone(graph: KnowledgeGraph):
    with graph.working_in(Scope("api")):
        graph.create_entities([Entity("README", "file")])
    with graph.working_in(Scope("tool")):
        graph.create_entities([Entity("cli", "program")])
    graph.delete_entities(["README", "cli"])  # across every project: one change, two projects
    both = _latest(graph)
    with graph.working_in(Scope("api")), pytest.raises(InvalidInputError, match="project tool.*every project"):
        undo(graph, UndoAsk(changes=(both,)))
    undo(graph, UndoAsk(changes=(both,)))
    with graph.working_in(Scope("api")):
        assert [e.name for e in graph.read_graph().entities] == ["README"]
    with graph.working_in(Scope("tool")):
        assert [e.name for e in graph.read_graph().entities] == ["cli"]


# -- undo of any suffix returns to the snapshot before it (hypothesis) ------------------------------

_NAMES = st.sampled_from(["Ada", "Bob", "Cy", "Dee"])
_FACTS = st.sampled_from(["likes tea", "plays chess", "lives in Oslo", "wrote a program"])
_WRITES = st.one_of(
    st.tuples(st.just("create"), _NAMES, _FACTS),
    st.tuples(st.just("fact"), _NAMES, _FACTS),
    st.tuples(st.just("unfact"), _NAMES, _FACTS),
    st.tuples(st.just("relate"), _NAMES, _NAMES),
    st.tuples(st.just("unrelate"), _NAMES, _NAMES),
    st.tuples(st.just("delete"), _NAMES, _NAMES),
    st.tuples(st.just("rename"), _NAMES, _NAMES),
)


def _write(graph: KnowledgeGraph, write: tuple[str, str, str]) -> None:
    """One write; one the domain refuses (a rename onto another's alias) changes nothing."""
    with suppress(InvalidInputError):
        _try_write(graph, write)


def _try_write(graph: KnowledgeGraph, write: tuple[str, str, str]) -> None:
    kind, first, second = write
    present = {entity.name for entity in graph.read_graph().entities}
    if kind == "create":
        graph.create_entities([Entity(first, "person", (second,))])
    elif kind == "fact" and first in present:
        graph.add_observations([ObservationAddition(first, (second,))])
    elif kind == "unfact":
        graph.delete_observations([ObservationDeletion(first, (second,))])
    elif kind == "relate":
        graph.create_relations([Relation(first, second, "knows")])
    elif kind == "unrelate":
        graph.delete_relations([Relation(first, second, "knows")])
    elif kind == "delete":
        graph.delete_entities([first])
    elif kind == "rename" and first in present and second not in present:
        update_entities(graph, [EntityUpdate(first, new_name=second)])


@pytest.mark.parametrize("backend", ["memory.db", "memory.jsonl"])
@examples(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(_WRITES, min_size=1, max_size=12), cut=st.integers(min_value=0, max_value=12))
def test_undoing_every_change_after_a_moment_returns_to_the_memory_as_it_was_then(
    backend: str, writes: list[tuple[str, str, str]], cut: int
):
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Settings(memory_path=Path(folder) / backend, semantic=False))
        graph = KnowledgeGraph(store)
        try:
            cut = min(cut, len(writes))
            for write in writes[:cut]:
                _write(graph, write)
            then = snapshot(graph)
            last = list_changes(graph, ChangeQuery(limit=1)).changes
            for write in writes[cut:]:
                _write(graph, write)
            later = [c.seq for c in list_changes(graph, ChangeQuery(limit=100)).changes]
            after = [seq for seq in later if not last or seq > last[0].seq]
            if after:
                undo(graph, UndoAsk(changes=tuple(after)))
            assert snapshot(graph) == then
        finally:
            store.close()


@pytest.mark.anyio
async def test_an_agent_undoes_its_mistake_through_undo_changes(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        ada = {"name": "Ada", "entityType": "person", "observations": ["wrote a program"]}
        await client.call_tool("create_entities", {"entities": [ada]})
        await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Ada", "contents": ["on the moon"]}]}
        )
        (latest,) = (await client.call_tool("list_changes", {"limit": 1})).structured_content["changes"]
        dry = await client.call_tool("undo_changes", {"changes": [latest["seq"]], "dryRun": True})
        assert dry.structured_content == {
            "undone": [latest["seq"]],
            "did": [f"change {latest['seq']} (add_observations): added 1 fact to Ada"],
            "dryRun": True,
        }
        done = await client.call_tool("undo_changes", {"changes": [latest["seq"]]})
        assert not done.is_error and done.content[0].text.startswith("Undid 1 change")
        opened = await client.call_tool("open_nodes", {"names": ["Ada"]})
        assert opened.structured_content["entities"][0]["observations"] == ["wrote a program"]
        (undid,) = (await client.call_tool("list_changes", {"limit": 1})).structured_content["changes"]
        assert (undid["via"], undid["did"][0]) == ("undo_changes", f"undid change {latest['seq']}")
        refused = await client.call_tool("undo_changes", {"changes": [1]})  # Ada's creation: a fact came after
        assert refused.is_error and "undo it too" in refused.content[0].text


def test_graphmem_undo_shows_what_it_will_take_back_and_asks_first(tmp_path: Path):
    memory = tmp_path / "memory.db"
    run("import", "--memory-file", memory, OFFICIAL)
    graph = KnowledgeGraph(open_store(Settings(memory_path=memory, semantic=False)))
    try:
        before = snapshot(graph)
        graph.create_entities([Entity("Mistake", "thing", ("wrong",))])
        wrong = _latest(graph)
    finally:
        graph.store.close()
    dry = run("undo", "--memory-file", memory, wrong, "--dry-run").output
    assert dry == f"change {wrong} (graphmem): created Mistake\nWould undo 1 change; nothing was changed (--dry-run).\n"
    declined = run("undo", "--memory-file", memory, wrong, input=b"n\n")
    assert declined.exit_code == 1 and "Aborted" in declined.output
    assert run("undo", "--memory-file", memory, wrong, input=b"y\n").output.endswith(
        "Undid 1 change, as a new change (graphmem history shows it).\n"
    )
    graph = KnowledgeGraph(open_store(Settings(memory_path=memory, semantic=False)))
    try:
        assert snapshot(graph) == before
    finally:
        graph.store.close()
    refused = run("undo", "--memory-file", memory, "1", "--since", "2026-01-01", "--yes")
    assert refused.exit_code == 1 and "one of the two" in refused.output


@examples(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(_WRITES, min_size=1, max_size=8), cut=st.integers(min_value=0, max_value=8))
def test_on_every_backend_undoing_a_suffix_returns_to_its_snapshot_and_as_of_sees_each_step(
    graph: KnowledgeGraph, writes: list[tuple[str, str, str]], cut: int
):
    # One memory for every example: each starts by emptying it (the log goes on growing).
    names = [entity.name for entity in graph.read_graph().entities]
    if names:
        graph.delete_entities(names)
    graph.delete_relations(list(graph.read_graph().relations))
    cut = min(cut, len(writes))
    steps = []
    for write in writes[:cut]:
        _write(graph, write)
    start = list_changes(graph, ChangeQuery(limit=1)).changes[0].seq if _logged(graph) else 0
    then = snapshot(graph)
    for write in writes[cut:]:
        _write(graph, write)
        time.sleep(0.002)
        steps.append((list_changes(graph, ChangeQuery(limit=1)).changes[0].at, snapshot(graph)))
    for moment, seen in steps:
        assert as_of(graph, moment, lambda: snapshot(graph)) == seen
    after = [c.seq for c in list_changes(graph, ChangeQuery(limit=100)).changes if c.seq > start]
    if after:
        undo(graph, UndoAsk(changes=tuple(after)))
    assert snapshot(graph) == then


def _logged(graph: KnowledgeGraph) -> bool:
    return bool(list_changes(graph, ChangeQuery(limit=1)).changes)


def test_an_import_is_undone_and_seen_as_of_before_it(tmp_path: Path):
    memory = tmp_path / "memory.db"
    run("import", "--memory-file", memory, OFFICIAL)
    graph = KnowledgeGraph(open_store(Settings(memory_path=memory, semantic=False)))
    try:
        imported = list_changes(graph, ChangeQuery(via="import")).changes
        assert imported and snapshot(graph)[0]
        assert as_of(graph, "2000-01-01", lambda: snapshot(graph)) == ({}, set())
        undo(graph, UndoAsk(changes=tuple(change.seq for change in imported)))
        assert snapshot(graph) == ({}, set())
    finally:
        graph.store.close()


@pytest.mark.anyio
async def test_an_undo_of_many_changes_answers_in_a_bounded_page(tmp_path: Path):
    settings = Settings(memory_path=tmp_path / "memory.db", semantic=False, toolset="all")
    async with Client(build_server(settings), mode="legacy") as client:
        for number in range(60):
            entity = {"name": f"E{number}", "entityType": "thing", "observations": []}
            await client.call_tool("create_entities", {"entities": [entity]})
        done = await client.call_tool("undo_changes", {"since": "2000-01-01", "dryRun": True})
        assert len(done.structured_content["undone"]) == 60
        did = done.structured_content["did"]
        assert len(did) == 51 and did[-1] == "and 10 more (list_changes shows each change)"
