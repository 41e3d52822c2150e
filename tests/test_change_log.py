"""The change log (graphmem.core.changes, domain/change_log.py): each write that changes the
memory is one change, with when, who and through what, and operations holding what taking it
back needs; read newest first, filtered, in pages; on every backend."""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.changes import Change
from graphmem.core.errors import ConfigError, EntityNotFoundError, InvalidInputError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion, Relation
from graphmem.core.projects import EVERY, Scope
from graphmem.domain import maintenance, projects
from graphmem.domain.as_of import as_of
from graphmem.domain.graph import LIBRARY, KnowledgeGraph
from graphmem.domain.history import ChangeQuery, describe, list_changes
from graphmem.domain.maintenance import EntityUpdate, update_entities
from graphmem.server import build_server
from graphmem.storage import open_store
from tests.test_cli import OFFICIAL, run


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


def _changes(graph: KnowledgeGraph, **asked: object) -> list[Change]:
    return list_changes(graph, ChangeQuery(**asked)).changes  # type: ignore[arg-type]


def _kinds(change: Change) -> list[str]:
    return [op["op"] for op in change.ops]


def test_each_write_is_one_change_saying_who_made_it_through_what(graph: KnowledgeGraph):
    with graph.authored_by("ada"), graph.through("create_entities"):
        graph.create_entities([Entity("Ada", "person", ("wrote a program",)), Entity("Acme", "company")])
    with graph.through("create_relations"):
        graph.create_relations([Relation("Ada", "Acme", "works_at")])
    with graph.through("add_observations"):
        graph.add_observations([ObservationAddition("Ada", ("likes tea", "born 1815"))])
    newest, related, created = _changes(graph)
    assert (created.author, created.via, created.project) == ("ada", "create_entities", None)
    assert {"op": "create_entities", "project": "", "names": ["Ada", "Acme"]} in created.ops
    assert (related.author, related.via) == (None, "create_relations")
    assert {"op": "create_relations", "project": "", "keys": [["Ada", "Acme", "works_at"]]} in related.ops
    assert "add_facts" in _kinds(newest) and describe(newest) == ["added 2 facts to Ada"]
    assert created.seq < related.seq < newest.seq
    assert created.at <= related.at <= newest.at


def test_a_write_that_changes_nothing_or_fails_records_nothing(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person")])
    graph.create_entities([Entity("Ada", "person")])  # already there: skipped
    graph.delete_entities(["Nobody"])
    with pytest.raises(EntityNotFoundError):
        # The first addition would apply; the second's entity is missing: all or nothing.
        graph.add_observations([ObservationAddition("Ada", ("x",)), ObservationAddition("Ghost", ("y",))])
    (only,) = _changes(graph)
    assert only.via == LIBRARY and _kinds(only) == ["create_entities"]


def test_what_a_change_took_away_is_kept_whole(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("one", "two", "three")), Entity("Acme", "company")])
    graph.create_relations([Relation("Ada", "Acme", "works_at")])
    graph.delete_observations([ObservationDeletion("Ada", ("one", "three"))])
    removed = _changes(graph, limit=1)[0]
    (remove,) = [op for op in removed.ops if op["op"] == "remove_facts"]
    assert remove["facts"] == [[0, "one"], [2, "three"]]  # each with its place before
    update_entities(graph, [EntityUpdate("Ada", new_name="Ada Lovelace")])
    renamed = _changes(graph, limit=1)[0]
    (update,) = [op for op in renamed.ops if op["op"] == "update_entity" and op["name"] == "Ada Lovelace"]
    assert (update["before"]["name"], update["before"]["entityType"]) == ("Ada", "person")
    assert "renamed Ada to Ada Lovelace" in describe(renamed)
    graph.delete_entities(["Ada Lovelace"])
    deleted = _changes(graph, limit=1)[0]
    (entity,) = [op["entity"] for op in deleted.ops if op["op"] == "delete_entity"]
    assert (entity["name"], entity["entityType"], entity["observations"]) == ("Ada Lovelace", "person", ["two"])
    (relation,) = [op["relation"] for op in deleted.ops if op["op"] == "delete_relation"]
    assert (relation["from"], relation["to"], relation["relationType"]) == ("Ada Lovelace", "Acme", "works_at")
    # The relation goes back before the entity it needs when the change is taken back.
    assert _kinds(deleted).index("delete_relation") < _kinds(deleted).index("delete_entity")


def test_the_log_filters_by_time_author_tool_and_entity_and_pages_newest_first(graph: KnowledgeGraph):
    for number in range(5):
        with graph.authored_by("bob" if number % 2 else None), graph.through("create_entities"):
            graph.create_entities([Entity(f"E{number}", "thing")])
    with graph.through("add_observations"):
        graph.add_observations([ObservationAddition("E1", ("a fact",))])
    everything = _changes(graph)
    assert [change.seq for change in everything] == sorted((change.seq for change in everything), reverse=True)
    assert [c.via for c in _changes(graph, via="add_observations")] == ["add_observations"]
    assert {c.author for c in _changes(graph, author="bob")} == {"bob"}
    assert len(_changes(graph, author="")) == 4  # local (no token): three creations and the fact
    assert [describe(c) for c in _changes(graph, entity="E1")] == [["added 1 fact to E1"], ["created E1"]]
    page = list_changes(graph, ChangeQuery(limit=2))
    assert page.more and [c.seq for c in page.changes] == [c.seq for c in everything[:2]]
    rest = _changes(graph, before=page.changes[-1].seq, limit=100)
    assert [c.seq for c in rest] == [c.seq for c in everything[2:]]
    middle = everything[3].at
    assert all(c.at >= middle for c in _changes(graph, since=middle))
    assert all(c.at < middle for c in _changes(graph, until=middle))
    assert _changes(graph, since="2999-01-01") == []


def test_an_entity_s_changes_follow_it_back_through_its_renames(graph: KnowledgeGraph):
    graph.create_entities([Entity("Initech", "company", ("makes staplers",))])
    graph.add_observations([ObservationAddition("Initech", ("moved to Austin",))])
    update_entities(graph, [EntityUpdate("Initech", new_name="Initech Ltd")])
    update_entities(graph, [EntityUpdate("Initech Ltd", new_name="Initrode")])
    # A new entity takes the old name: its changes are its own, not Initrode's.
    graph.create_entities([Entity("Initech", "company", ("a startup",))])
    lines = [describe(c) for c in _changes(graph, entity="Initrode")]
    assert [line for line in lines if line != ["updated Initrode"]] == [
        ["renamed Initech Ltd to Initrode"],
        ["renamed Initech to Initech Ltd"],
        ["added 1 fact to Initech"],
        ["created Initech"],
    ]
    assert [describe(c) for c in _changes(graph, entity="Initech")] == [["created Initech"]]
    graph.delete_entities(["Initech"])
    graph.create_entities([Entity("Initech", "company", ("a third one",))])
    assert [describe(c) for c in _changes(graph, entity="Initech")] == [["created Initech"]]


def test_bad_filters_are_refused_saying_what_to_send(graph: KnowledgeGraph):
    with pytest.raises(InvalidInputError, match="since.*not a time.*ISO 8601"):
        _changes(graph, since="last tuesday")
    with pytest.raises(InvalidInputError, match="limit.*give 1 to 100"):
        _changes(graph, limit=0)
    with pytest.raises(InvalidInputError, match="before"):
        _changes(graph, before=0)


def test_a_project_sees_its_changes_and_the_shared_space_s_and_moves_are_logged(graph: KnowledgeGraph):
    with graph.working_in(Scope("api")):
        graph.create_entities([Entity("README", "file", ("explains the api",))])
    with graph.working_in(Scope("tool")):
        graph.create_entities([Entity("README", "file", ("explains the tool",))])
    with graph.working_in(Scope("")):
        graph.create_entities([Entity("Alice", "person")])
    with graph.working_in(Scope("api")):
        in_api = _changes(graph)
    assert [(c.project, describe(c)) for c in in_api] == [("", ["created Alice"]), ("api", ["created README"])]
    assert len(_changes(graph)) == 3  # every project
    with graph.working_in(Scope("api")), graph.through("move_entities"):
        projects.move(graph, ["README"], "docs")
    moved = _changes(graph, limit=1)[0]
    assert {"op": "move_entity", "name": "README", "from": "api", "to": "docs"} in moved.ops
    with graph.working_in(EVERY), graph.through("project delete"):
        projects.delete_project(graph, "tool")
    deleted = _changes(graph, limit=1)[0]
    assert deleted.via == "project delete"
    assert [op["entity"]["observations"] for op in deleted.ops if op["op"] == "delete_entity"] == [
        ["explains the tool"]
    ]


@pytest.mark.anyio
async def test_an_agent_reads_the_log_through_list_changes(settings: Settings):
    # The real MCP client on the server: the tool a change was made through is what the log says.
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await client.call_tool(
            "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]}
        )
        await client.call_tool("add_observations", {"observations": [{"entityName": "Ada", "contents": ["likes tea"]}]})
        answer = await client.call_tool("list_changes", {"limit": 1})
        assert not answer.is_error
        (latest,) = answer.structured_content["changes"]
        assert (latest["via"], latest["by"], latest["did"]) == ("add_observations", "local", ["added 1 fact to Ada"])
        assert answer.structured_content["before"] == latest["seq"]
        older = await client.call_tool("list_changes", {"before": latest["seq"], "entity": "Ada"})
        assert [item["did"] for item in older.structured_content["changes"]] == [["created Ada"]]
        refused = await client.call_tool("list_changes", {"since": "yesterday"})
        assert refused.is_error and "ISO 8601" in refused.content[0].text


def test_graphmem_history_prints_the_log_newest_first(tmp_path: Path):
    memory = tmp_path / "memory.db"
    assert run("history", "--memory-file", memory).output == "No change recorded.\n"
    run("import", "--memory-file", memory, OFFICIAL)
    output = run("history", "--memory-file", memory).output
    assert re.match(r"change 1  \d{4}-\d\d-\d\dT[\d:.]+Z  local  via import\n    created ", output)
    assert "no change matches" in run("history", "--memory-file", memory, "--tool", "explorer").output.lower()
    refused = run("history", "--memory-file", memory, "--since", "soon")
    assert refused.exit_code == 1 and "since" in refused.output and "ISO 8601" in refused.output


def test_compact_keeps_the_days_of_history_the_retention_says_and_no_time_before_is_seen(
    graph: KnowledgeGraph, monkeypatch: pytest.MonkeyPatch
):
    graph.create_entities([Entity("Old", "thing")])
    old = _changes(graph)[0]
    time.sleep(0.02)
    graph.create_entities([Entity("New", "thing")])
    new = _changes(graph)[0]
    # 30 days on from a moment between the two: the first is older than a retention of 30 days.
    between = _moment(old.at) + (_moment(new.at) - _moment(old.at)) / 2
    graph.history_days = 30
    monkeypatch.setattr(maintenance, "datetime", _Clock(between + timedelta(days=30)))
    maintenance.compact(graph)
    forgot, kept = _changes(graph)
    assert (forgot.via, describe(forgot)[0].startswith("forgot 1 change made before ")) == ("compact", True)
    assert describe(kept) == ["created New"]
    with graph.store.read():
        since = graph.store.history_since()
    assert since is not None and old.at < since <= new.at
    with pytest.raises(InvalidInputError, match="asOf.*where the history this memory keeps starts"):
        as_of(graph, old.at, lambda: None)
    assert as_of(graph, new.at, lambda: sorted(e.name for e in graph.read_graph().entities)) == ["New", "Old"]


def _moment(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


class _Clock:
    """`datetime` with a `now` that is a given moment (what compact takes the retention from)."""

    def __init__(self, moment: datetime) -> None:
        self._moment = moment

    def now(self, tz: object = None) -> datetime:
        return self._moment


def test_the_retention_is_a_whole_number_of_days():
    assert Settings.from_env({"GRAPHMEM_HISTORY_DAYS": "365"}).history_days == 365
    assert Settings.from_env({}).history_days is None
    with pytest.raises(ConfigError, match="GRAPHMEM_HISTORY_DAYS.*whole number of days"):
        Settings.from_env({"GRAPHMEM_HISTORY_DAYS": "a year"})


def test_a_jsonl_log_numbers_on_after_its_changes_were_forgotten(tmp_path: Path):
    graph = KnowledgeGraph(open_store(Settings(memory_path=tmp_path / "memory.jsonl", semantic=False)))
    try:
        graph.create_entities([Entity("A", "thing")])
        graph.create_entities([Entity("B", "thing")])
        with graph.store.write():
            assert graph.store.forget_changes("2999-01-01") == 2
        graph.create_entities([Entity("C", "thing")])
        assert [change.seq for change in _changes(graph)] == [3]
    finally:
        graph.store.close()
