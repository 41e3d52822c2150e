"""Facts that hold for a time: `validFrom` / `validUntil` written by the agent or taken from a
`[2024-03-01]` prefix, reads at a date (`validAt`), and a fact whose validity ended leaving the
current facts; on every backend, through the domain and the real client, and as a property."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client

from graphmem.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion
from graphmem.core.validity import Validity, bound, end_of, normalised
from graphmem.domain.as_of import as_of
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import ChangeQuery, list_changes
from graphmem.domain.observations import history_of, records_of
from graphmem.domain.validity import end_lapsed_facts
from graphmem.server import build_server
from graphmem.storage import open_store
from graphmem.transfer import export_graph


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


def _facts(graph: KnowledgeGraph, name: str, valid_at: str | None = None) -> list[str]:
    def read() -> list[str]:
        (entity,) = graph.open_nodes([name]).entities
        return list(entity.observations)

    return read() if valid_at is None else as_of(graph, None, read, valid_at=valid_at)


def _add(graph: KnowledgeGraph, name: str, fact: str, valid_from=None, valid_until=None, attribute=None) -> None:
    graph.add_observations([ObservationAddition(name, (fact,), (), attribute, valid_from, valid_until)])


def _in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- the bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "kept", "start", "end"),
    [
        ("2024-03-01", "2024-03-01", "2024-03-01T00:00:00.000Z", "2024-03-02T00:00:00.000Z"),
        ("2024-02", "2024-02", "2024-02-01T00:00:00.000Z", "2024-03-01T00:00:00.000Z"),
        ("2024-12", "2024-12", "2024-12-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"),
        ("2024", "2024", "2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"),
        ("2024-12-31", "2024-12-31", "2024-12-31T00:00:00.000Z", "2025-01-01T00:00:00.000Z"),
        ("2024-03-01T09:30:00+02:00", *["2024-03-01T07:30:00.000Z"] * 3),
        ("2024-03-01 09:30", *["2024-03-01T09:30:00.000Z"] * 3),
    ],
)
def test_a_bound_is_a_whole_day_month_or_year_or_an_instant(written, kept, start, end):
    assert normalised(written) == kept
    assert bound(written) == start
    assert end_of(kept) == end


@pytest.mark.parametrize("written", ["2024-02-30", "2024-13", "next tuesday", "", "24-03-01", "2024-03-01T25:00Z"])
def test_what_is_not_a_date_is_not_a_bound(written):
    assert normalised(written) is None


def test_a_fact_holds_from_its_start_until_its_end_not_included():
    validity = Validity("2024-03", "2024-05")
    assert not validity.holds_at("2024-02-29T23:59:59.999Z")
    assert validity.holds_at("2024-03-01T00:00:00.000Z")
    assert validity.holds_at("2024-05-31T23:59:59.999Z")  # May included: "until May"
    assert not validity.holds_at("2024-06-01T00:00:00.000Z")


# -- reads at a date --------------------------------------------------------------------------


def test_a_read_at_a_date_shows_what_held_then(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Likes tea", "[2021-06-01] Joined the chess club"))])
    _add(graph, "Ada", "Lives in Paris", "2015", "2019")
    _add(graph, "Ada", "Lives in Oslo", "2020")
    _add(graph, "Ada", "Works at Acme", "2018-01", attribute="employer")
    _add(graph, "Ada", "Works at Initech", "2023-06-01", attribute="employer")
    # Now: Paris ended long ago (straight to the history); Acme was replaced by Initech.
    assert _facts(graph, "Ada") == [
        "Likes tea",
        "[2021-06-01] Joined the chess club",
        "Lives in Oslo",
        "Works at Initech",
    ]
    assert _facts(graph, "Ada", "2016-07") == ["Likes tea", "Lives in Paris"]
    assert _facts(graph, "Ada", "2019-12-31") == ["Likes tea", "Lives in Paris", "Works at Acme"]  # 2019 whole
    assert _facts(graph, "Ada", "2020-01-01") == ["Likes tea", "Lives in Oslo", "Works at Acme"]
    assert _facts(graph, "Ada", "2022") == [
        "Likes tea",
        "[2021-06-01] Joined the chess club",
        "Lives in Oslo",
        "Works at Acme",
    ]
    assert _facts(graph, "Ada", "2023-06-01T00:00:00Z") == [
        "Likes tea",
        "[2021-06-01] Joined the chess club",
        "Lives in Oslo",
        "Works at Initech",
    ]
    assert _facts(graph, "Ada") == _facts(graph, "Ada", "2030")  # and nothing was changed by reading


def test_a_corrected_fact_never_held_and_an_unmarked_fact_always_holds(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Born in 1851", "Likes tea"))])
    graph.add_observations([ObservationAddition("Ada", ("Born in 1815",), ("obs_1",))])  # a correction
    assert _facts(graph, "Ada", "1900") == ["Likes tea", "Born in 1815"]
    assert _facts(graph, "Ada", "1700") == ["Likes tea", "Born in 1815"]


def test_a_search_at_a_date_finds_by_the_facts_that_held_then(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person"), Entity("Bob", "person")])
    _add(graph, "Ada", "Works at Acme", "2018", attribute="employer")
    _add(graph, "Ada", "Works at Initech", "2023", attribute="employer")
    _add(graph, "Bob", "Works at Acme", "2024")

    def names(valid_at: str | None) -> list[str]:
        def read() -> list[str]:
            return sorted(entity.name for entity in graph.search_nodes("Acme").entities)

        return read() if valid_at is None else as_of(graph, None, read, valid_at=valid_at)

    assert names(None) == ["Bob"]
    assert names("2020") == ["Ada"]
    assert names("2024-06") == ["Bob"]


def test_valid_at_goes_with_as_of(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person")])
    _add(graph, "Ada", "Lives in Paris", "2015", "2019")
    written = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    time.sleep(0.01)
    _add(graph, "Ada", "Lives in Rome", "2016", "2017")

    def read() -> list[str]:
        return list(graph.open_nodes(["Ada"]).entities[0].observations)

    assert as_of(graph, written, read, valid_at="2016-06") == ["Lives in Paris"]
    assert as_of(graph, None, read, valid_at="2016-06") == ["Lives in Paris", "Lives in Rome"]


# -- an ended fact is not current --------------------------------------------------------------


def test_a_fact_that_has_ended_when_written_goes_to_the_history(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Likes tea",))])
    _add(graph, "Ada", "Lives in Paris", "2015", "2019")
    assert _facts(graph, "Ada") == ["Likes tea"]
    with graph.store.read():
        (entity,) = graph.store.get_entities(["Ada"])
    (past,) = history_of(entity)
    assert (past.content, past.valid_from, past.valid_until, past.superseded_by) == (
        "Lives in Paris",
        "2015",
        "2019",
        None,
    )
    assert [found.name for found in graph.search_nodes("Paris").entities] == []


def test_a_fact_leaves_the_current_facts_when_its_validity_ends(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Likes tea",))])
    _add(graph, "Ada", "On leave", valid_until=_in(1.0))
    _add(graph, "Ada", "At the Oslo office", valid_until=_in(3600))
    assert _facts(graph, "Ada") == ["Likes tea", "On leave", "At the Oslo office"]
    assert end_lapsed_facts(graph) == 0
    time.sleep(2.2)  # past the end, and past the second a read of the next end is trusted
    assert end_lapsed_facts(graph) == 1
    assert _facts(graph, "Ada") == ["Likes tea", "At the Oslo office"]
    assert end_lapsed_facts(graph) == 0  # the next end is an hour away
    with graph.store.read():
        assert graph.store.next_fact_end() == end_of(normalised(_facts_until(graph)))  # type: ignore[arg-type]
    (change, *_) = list_changes(graph, ChangeQuery(limit=1)).changes
    assert change.via == "validity" and change.author is None


def test_a_plan_changed_or_dropped_leaves_one_value_at_a_time(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person")])
    _add(graph, "Ada", "Lives in Paris", attribute="home")
    _add(graph, "Ada", "Lives in Berlin", "2030-01-01", attribute="home")
    _add(graph, "Ada", "Lives in Munich", "2030-01-01", attribute="home")  # the move, to another city
    assert _facts(graph, "Ada") == ["Lives in Paris", "Lives in Munich"]
    assert _facts(graph, "Ada", "2031") == ["Lives in Munich"]
    _add(graph, "Ada", "Lives in Hamburg", "2032-01-01", attribute="home")  # and on, later
    assert (_facts(graph, "Ada", "2029"), _facts(graph, "Ada", "2031"), _facts(graph, "Ada", "2033")) == (
        ["Lives in Paris"],
        ["Lives in Munich"],
        ["Lives in Hamburg"],
    )
    graph.delete_observations([ObservationDeletion("Ada", ("Lives in Munich",))])  # that move is off
    assert _facts(graph, "Ada", "2031") == ["Lives in Paris"]
    graph.delete_observations([ObservationDeletion("Ada", ("Lives in Hamburg",))])
    assert _facts(graph, "Ada", "2040") == ["Lives in Paris"]
    # A home of the past, written for the record, replaces nothing.
    _add(graph, "Ada", "Lived in Vienna", "2015", "2019", attribute="home")
    assert _facts(graph, "Ada") == ["Lives in Paris"]
    # A plan corrected through supersedes: its new version is a value of the attribute too.
    _add(graph, "Ada", "Lives in Berlin", "2030-01-01", attribute="home")
    with graph.store.read():
        (ada,) = graph.store.get_entities(["Ada"])
    (planned,) = [record for record in records_of(ada) if record.content == "Lives in Berlin"]
    graph.add_observations([ObservationAddition("Ada", ("Lives in Berlin, from 2032",), (planned.id,), None, "2032")])
    assert (_facts(graph, "Ada", "2031"), _facts(graph, "Ada", "2033")) == (
        ["Lives in Paris"],
        ["Lives in Berlin, from 2032"],
    )


def test_an_export_shows_a_fact_whose_validity_ended_as_a_past_version_and_moves_nothing(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Likes tea",))])
    _add(graph, "Ada", "On leave", valid_until=_in(0.5))
    time.sleep(0.6)  # ended; no call has swept
    out = io.BytesIO()
    export_graph(graph, out)
    (ada,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert ada["observations"] == ["Likes tea"]
    assert [version["content"] for version in ada["observationHistory"]] == ["On leave"]
    assert _facts(graph, "Ada") == ["Likes tea", "On leave"]  # the store is as it was, until a sweep


def test_the_memory_as_it_was_shows_a_fact_current_then_after_it_ended(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Likes tea",))])
    _add(graph, "Ada", "On leave", valid_until=_in(1.0))
    then = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    time.sleep(2.2)
    assert end_lapsed_facts(graph) == 1
    read = lambda: list(graph.open_nodes(["Ada"]).entities[0].observations)  # noqa: E731
    assert as_of(graph, then, read) == ["Likes tea", "On leave"]
    assert read() == ["Likes tea"]


def test_a_value_that_begins_later_leaves_the_one_there_is_until_then(graph: KnowledgeGraph):
    """A move planned for later: until it begins the old home still holds, and the new one waits
    beside it; then the sweep ends the old one where the new one begins."""
    graph.create_entities([Entity("Ada", "person")])
    _add(graph, "Ada", "Lives in Paris", attribute="home")
    begins = _in(1.0)
    _add(graph, "Ada", "Lives in Berlin", begins, attribute="home")
    assert _facts(graph, "Ada") == ["Lives in Paris", "Lives in Berlin"]
    assert _facts(graph, "Ada", _in(0)) == ["Lives in Paris"]
    assert _facts(graph, "Ada", "2099") == ["Lives in Berlin"]
    # A value for now, written meanwhile, replaces the one holding now, until the one waiting begins.
    _add(graph, "Ada", "Lives in Rome", attribute="home")
    assert _facts(graph, "Ada") == ["Lives in Berlin", "Lives in Rome"]
    assert _facts(graph, "Ada", _in(0)) == ["Lives in Rome"]
    assert end_lapsed_facts(graph) == 0
    time.sleep(2.2)  # past the start, and past the second a read of the next end is trusted
    assert end_lapsed_facts(graph) == 1
    assert _facts(graph, "Ada") == ["Lives in Berlin"]
    with graph.store.read():
        (ada,) = graph.store.get_entities(["Ada"])
    paris, rome = history_of(ada)
    assert (paris.content, rome.content) == ("Lives in Paris", "Lives in Rome")
    assert paris.validity.end is not None and paris.validity.end == rome.validity.start  # replaced by Rome
    assert rome.validity.end == Validity(None, begins).end  # held until Berlin began


def _facts_until(graph: KnowledgeGraph) -> str:
    with graph.store.read():
        (entity,) = graph.store.get_entities(["Ada"])
    (meta,) = [m for m in entity.extra["observationMeta"] if "validUntil" in m]  # type: ignore[index]
    return str(meta["validUntil"])


def test_bad_bounds_are_refused_with_what_to_do_and_change_nothing(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("Likes tea",))])
    with pytest.raises(InvalidInputError, match=r"observations\[0\]\.validFrom.*not a date.*2024-03"):
        _add(graph, "Ada", "Lives in Oslo", "next tuesday")
    with pytest.raises(InvalidInputError, match=r"observations\[0\]\.validUntil.*ends before validFrom"):
        _add(graph, "Ada", "Lives in Oslo", "2020-05", "2020-04")
    with pytest.raises(InvalidInputError, match=r"validAt.*not a date"):
        _facts(graph, "Ada", "soon")
    assert _facts(graph, "Ada") == ["Likes tea"]


# -- through the real client -------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_agent_writes_valid_time_and_reads_at_a_date(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await client.call_tool(
            "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["Likes tea"]}]}
        )
        soon = _in(1.0)
        for item in (
            {"contents": ["Works at Acme"], "attribute": "employer", "validFrom": "2018"},
            {"contents": ["Works at Initech"], "attribute": "employer", "validFrom": "2023-06"},
            {"contents": ["On leave"], "validUntil": soon},
        ):
            added = await client.call_tool("add_observations", {"observations": [{"entityName": "Ada", **item}]})
            assert not added.is_error, added.content[0].text
        opened = await client.call_tool("open_nodes", {"names": ["Ada"]})
        assert opened.structured_content["entities"][0]["observations"] == ["Likes tea", "Works at Initech", "On leave"]
        then = await client.call_tool("open_nodes", {"names": ["Ada"], "validAt": "2020-02-02"})
        assert then.structured_content["entities"][0]["observations"] == ["Likes tea", "On leave", "Works at Acme"]
        found = await client.call_tool("search_nodes", {"query": "Acme", "mode": "lexical", "validAt": "2020"})
        assert [entity["name"] for entity in found.structured_content["entities"]] == ["Ada"]
        got = await client.call_tool("get_entity", {"name": "Ada"})
        leave = [o for o in got.structured_content["observationRecords"] if o["content"] == "On leave"]
        assert leave[0]["validUntil"] == soon
        await asyncio.sleep(2.2)
        read = await client.call_tool("read_graph", {})
        assert read.structured_content["entities"][0]["observations"] == ["Likes tea", "Works at Initech"]
        refused = await client.call_tool(
            "add_observations",
            {"observations": [{"entityName": "Ada", "contents": ["x"], "validFrom": "someday"}]},
        )
        assert refused.is_error and "validFrom" in refused.content[0].text
        refused = await client.call_tool("create_entities", {"entities": [], "validAt": "2020"})
        assert refused.is_error and "validAt: is for reads" in refused.content[0].text
        refused = await client.call_tool("read_graph", {"validAt": "yesterday"})
        assert refused.is_error and "validAt" in refused.content[0].text


# -- as a property -------------------------------------------------------------------------------

_YEARS = st.integers(min_value=2000, max_value=2030).map(str)
_BOUNDS = st.tuples(st.one_of(st.none(), _YEARS), st.one_of(st.none(), _YEARS))


@pytest.mark.parametrize("backend", ["memory.db", "memory.jsonl"])
@examples(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(facts=st.lists(_BOUNDS, min_size=1, max_size=8), at=_YEARS)
def test_a_read_at_a_date_shows_exactly_the_facts_that_held(backend, facts, at):
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Settings(memory_path=Path(folder) / backend, semantic=False))
        graph = KnowledgeGraph(store)
        try:
            graph.create_entities([Entity("Ada", "person")])
            written = []
            for index, (start, end) in enumerate(facts):
                if start is not None and end is not None and end < start:
                    start, end = end, start
                _add(graph, "Ada", f"fact {index}", start, end)
                written.append((f"fact {index}", start, end))
            now = datetime.now(UTC).isoformat()
            expected = {fact for fact, start, end in written if Validity(start, end).holds_at(bound(at))}  # type: ignore[arg-type]
            assert set(_facts(graph, "Ada", at)) == expected
            current = {fact for fact, start, end in written if not Validity(start, end).ended_by(now)}
            assert set(_facts(graph, "Ada")) == current
        finally:
            store.close()
