"""One current value per attribute: a fact that says what it sets (`"attribute": "employer"`)
replaces the entity's current fact of that attribute, which becomes a past version; on every
backend, through the domain and the real client, and as a property over random writes."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client

from graphmem.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, ObservationAddition
from graphmem.domain.alike import alike_facts
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import ChangeQuery, list_changes
from graphmem.domain.observations import history_of, records_of
from graphmem.domain.undo import UndoAsk, undo
from graphmem.server import build_server
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


def _facts(graph: KnowledgeGraph, name: str) -> list[str]:
    (entity,) = graph.open_nodes([name]).entities
    return list(entity.observations)


def _set(graph: KnowledgeGraph, name: str, attribute: str, value: str) -> None:
    graph.add_observations([ObservationAddition(name, (value,), attribute=attribute)])


def test_a_new_value_of_an_attribute_replaces_the_current_one(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("wrote a program",))])
    _set(graph, "Ada", "employer", "Works at Acme")
    _set(graph, "Ada", "city", "Lives in London")
    _set(graph, "Ada", "employer", "Works at Initech")
    assert _facts(graph, "Ada") == ["wrote a program", "Lives in London", "Works at Initech"]
    with graph.store.read():
        (entity,) = graph.store.get_entities(["Ada"])
    (old,) = history_of(entity)
    assert (old.content, old.attribute, old.superseded_by is not None) == ("Works at Acme", "employer", True)
    assert [(r.content, r.attribute) for r in records_of(entity)][1:] == [
        ("Lives in London", "city"),
        ("Works at Initech", "employer"),
    ]
    _set(graph, "Ada", "employer", "Works at Initech")  # the same value again: nothing changes
    assert _facts(graph, "Ada") == ["wrote a program", "Lives in London", "Works at Initech"]


def test_an_attribute_goes_with_one_value_and_not_with_supersedes(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person", ("wrote a program",))])
    with pytest.raises(InvalidInputError, match=r"observations\[0\]\.attribute.*one content"):
        graph.add_observations([ObservationAddition("Ada", ("Acme", "Initech"), attribute="employer")])
    with pytest.raises(InvalidInputError, match="supersedes both"):
        graph.add_observations([ObservationAddition("Ada", ("Acme",), ("obs_1",), attribute="employer")])
    assert _facts(graph, "Ada") == ["wrote a program"]


def test_undoing_a_new_value_brings_the_old_one_back_as_the_current_value(graph: KnowledgeGraph):
    graph.create_entities([Entity("Ada", "person")])
    _set(graph, "Ada", "employer", "Works at Acme")
    _set(graph, "Ada", "employer", "Works at Initech")
    latest = list_changes(graph, ChangeQuery(limit=1)).changes[0].seq
    undo(graph, UndoAsk(changes=(latest,)))
    assert _facts(graph, "Ada") == ["Works at Acme"]
    _set(graph, "Ada", "employer", "Works at Globex")  # and it is still the attribute's value
    assert _facts(graph, "Ada") == ["Works at Globex"]


@pytest.mark.anyio
async def test_an_agent_sets_an_attribute_through_add_observations(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await client.call_tool(
            "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]}
        )
        for value in ("Works at Acme", "Works at Initech"):
            added = await client.call_tool(
                "add_observations",
                {"observations": [{"entityName": "Ada", "contents": [value], "attribute": "employer"}]},
            )
            assert not added.is_error
        opened = await client.call_tool("open_nodes", {"names": ["Ada"]})
        assert opened.structured_content["entities"][0]["observations"] == ["Works at Initech"]
        found = await client.call_tool("search_nodes", {"query": "Acme", "mode": "lexical"})
        assert found.structured_content["entities"] == []  # the replaced value does not surface
        refused = await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Ada", "contents": ["a", "b"], "attribute": "x"}]}
        )
        assert refused.is_error and "one content" in refused.content[0].text


_VALUES = st.tuples(st.sampled_from(["employer", "city", None]), st.sampled_from(["Acme", "Oslo", "Initech", "Rome"]))


@pytest.mark.parametrize("backend", ["memory.db", "memory.jsonl"])
@examples(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(_VALUES, min_size=1, max_size=12))
def test_attribute_writes_never_leave_two_current_values(backend: str, writes: list[tuple[str | None, str]]):
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Settings(memory_path=Path(folder) / backend, semantic=False))
        graph = KnowledgeGraph(store)
        try:
            graph.create_entities([Entity("Ada", "person")])
            expected: dict[str, str] = {}
            for attribute, value in writes:
                fact = f"{attribute or 'note'}: {value}"
                graph.add_observations([ObservationAddition("Ada", (fact,), attribute=attribute)])
                if attribute is not None:
                    expected[attribute] = fact
            with store.read():
                (entity,) = store.get_entities(["Ada"])
            current = [(record.attribute, record.content) for record in records_of(entity) if record.attribute]
            assert sorted(current) == sorted(expected.items())
        finally:
            store.close()


@pytest.mark.anyio
async def test_save_memory_sets_attributes_beside_an_entity_s_observations(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        for employer in ("Works at Acme", "Works at Initech"):
            saved = await client.call_tool(
                "save_memory",
                {
                    "threadId": "t1",
                    "entities": [
                        {
                            "name": "Ada Lovelace",
                            "entityType": "Person",
                            "observations": ["Writes programs"],
                            "relations": [{"targetEntity": "Charles Babbage", "relationType": "knows"}],
                            "attributes": {"employer": employer, "city": "Lives in London"},
                        },
                        {
                            "name": "Charles Babbage",
                            "entityType": "Person",
                            "observations": ["Designed engines"],
                            "relations": [{"targetEntity": "Ada Lovelace", "relationType": "knows"}],
                        },
                    ],
                },
            )
            assert not saved.is_error, saved.content[0].text
        opened = await client.call_tool("open_nodes", {"names": ["Ada Lovelace"]})
        facts = opened.structured_content["entities"][0]["observations"]
        assert sorted(facts) == ["Lives in London", "Works at Initech", "Writes programs"]


def test_facts_that_look_like_values_of_one_attribute_are_named_as_candidates(graph: KnowledgeGraph):
    graph.create_entities(
        [Entity("Ada", "person", ("Works at Acme", "Lives in London", "Works at Initech", "Likes tea"))]
    )
    _set(graph, "Ada", "city", "Lives in Paris")  # a marked value; the unmarked London stays
    with graph.store.read():
        (entity,) = graph.store.get_entities(["Ada"])
    groups = alike_facts(records_of(entity))
    ids = {record.content: record.id for record in records_of(entity)}
    # "Lives in London" is another value of the marked city, but unmarked: both are named.
    assert groups == [
        ("works at", [ids["Works at Acme"], ids["Works at Initech"]]),
        ("lives in", [ids["Lives in London"], ids["Lives in Paris"]]),
    ]
    # Nothing is changed by naming them: the facts are all still current.
    assert len(_facts(graph, "Ada")) == 5


@pytest.mark.anyio
async def test_get_entity_names_the_alike_facts(settings: Settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        ada = {"name": "Ada", "entityType": "person", "observations": ["Works at Acme", "Works at Initech"]}
        await client.call_tool("create_entities", {"entities": [ada]})
        got = await client.call_tool("get_entity", {"name": "Ada"})
        assert got.structured_content["alikeFacts"] == [{"startsWith": "works at", "ids": ["obs_1", "obs_2"]}]
