"""save_memory on both backends and through the MCP client: all or nothing, spec 001's errors, quality score."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator, Iterator
from typing import Any

import jsonschema
import pytest
from mcp import Client

from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.domain import saving
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.saving import EntityDraft, RelationDraft
from graphmem.server import build_server
from graphmem.storage import open_store


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The tools answer alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


SPEC_VALID: dict[str, Any] = {
    "entities": [
        {
            "name": "Andrii",
            "entityType": "Person",
            "observations": ["Works at Google", "Author of MCP Memory Server", "Uses Windows"],
            "relations": [
                {"targetEntity": "Python Scripts", "relationType": "created"},
                {"targetEntity": "Portfolio", "relationType": "updates for"},
            ],
            "importance": 1.0,
        },
        {
            "name": "Python Scripts",
            "entityType": "CodeArtifact",
            "observations": ["update_portfolio.py is main script", "Uses python-docx 1.2.0", "Uses lxml 6.0.2"],
            "relations": [
                {"targetEntity": "Andrii", "relationType": "created by"},
                {"targetEntity": "Portfolio", "relationType": "modifies"},
            ],
            "importance": 0.6,
        },
        {
            "name": "Portfolio",
            "entityType": "Document",
            "observations": [
                "Final file: shevchenko-viktoria-yevgenivna-v4.docx",
                "Contains 2 main tables",
                "Total 21 records",
            ],
            "relations": [
                {"targetEntity": "Python Scripts", "relationType": "modified by"},
                {"targetEntity": "Andrii", "relationType": "updated by"},
            ],
            "importance": 0.9,
        },
    ],
    "threadId": "portfolio-update-2026",
}


@pytest.fixture
def graph(any_backend_settings: Settings) -> Iterator[KnowledgeGraph]:
    store = open_store(any_backend_settings)
    yield KnowledgeGraph(store)
    store.close()


def _draft(name: str, targets: list[str], observations: tuple[str, ...] = ("Some fact here",), kind="Thing"):
    return EntityDraft(name, kind, observations, tuple(RelationDraft(target, "knows") for target in targets))


def test_one_invalid_item_saves_nothing_and_every_problem_is_listed(graph):
    outcome = saving.save_memory(
        graph,
        [
            _draft("A", ["B"]),
            _draft("B", ["Nowhere"], ("Too short",)),
            _draft("C", [], ("Way. Too. Many.",)),
        ],
        "t",
    )
    assert not outcome.success
    problems = [(p.entity, p.problem) for p in outcome.problems]
    assert ("C", "Too many sentences (3). Max 2. One fact per observation.") in problems
    assert any(entity == "C" and "must have at least 1 relation" in text for entity, text in problems)
    assert any(
        entity == "B" and "'Nowhere' not found in this request or in memory" in text for entity, text in problems
    )
    assert graph.read_graph().entities == ()


def test_a_target_already_in_memory_or_given_by_alias_is_accepted(graph):
    graph.import_graph([Entity("Berlin", "City", (), {"aliases": ["BER"]})], [])
    outcome = saving.save_memory(graph, [_draft("Ana", ["Berlin"]), _draft("Ben", ["BER"])], "t")
    assert outcome.success and outcome.relations_created == 2
    assert {r.key for r in graph.read_graph().relations} == {("Ana", "Berlin", "knows"), ("Ben", "Berlin", "knows")}


def test_an_entity_already_in_memory_gains_only_new_facts_and_a_version(graph):
    saving.save_memory(graph, [_draft("Ana", ["Ben"]), _draft("Ben", ["Ana"])], "t1")
    outcome = saving.save_memory(graph, [_draft("Ana", ["Ben"], ("Some fact here", "Lives in Oslo"))], "t2")
    assert (outcome.entities_created, outcome.entities_updated, outcome.observations_added) == (0, 1, 1)
    assert outcome.relations_created == 0
    ana = graph.open_nodes(["Ana"]).entities[0]
    assert ana.observations == ("Some fact here", "Lives in Oslo")
    assert ana.extra is not None and ana.extra["version"] == 2 and ana.extra["threadId"] == "t2"


def test_metadata_is_stamped_on_entities_and_relations(graph):
    saving.save_memory(graph, [_draft("Ana", ["Ben"]), _draft("Ben", ["Ana"])], "thread-9")
    saved = graph.read_graph()
    for item in (*saved.entities, *saved.relations):
        assert item.extra is not None
        assert item.extra["version"] == 1 and item.extra["threadId"] == "thread-9"
        assert item.extra["createdAt"].endswith("Z")


def test_the_type_is_capitalised_with_a_warning(graph):
    outcome = saving.save_memory(graph, [_draft("Ana", ["Ben"], kind="person"), _draft("Ben", ["Ana"])], "t")
    assert outcome.warnings and graph.open_nodes(["Ana"]).entities[0].entity_type == "Person"


def test_the_quality_score_is_the_documented_mean():
    full = _draft("A", ["B", "C"], ("One fact here", "Another fact", "A third fact"))
    assert saving.entity_quality(full, 0) == 1.0
    thin = _draft("A", ["B"], ("First fact. Second fact.",))
    # connected 1/2, atomic 0, rich 1/3, conventional 0.5
    assert saving.entity_quality(thin, 1) == pytest.approx((0.5 + 0 + 1 / 3 + 0.5) / 4)


# -- through the MCP client ---------------------------------------------------------------


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as connected:
        yield connected


async def _save(client: Client, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool("save_memory", arguments)
    listing = {tool.name: tool for tool in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, listing["save_memory"].output_schema)
    return result


@pytest.mark.anyio
async def test_the_spec_valid_request_saves_everything(client):
    result = await _save(client, SPEC_VALID)
    assert not result.is_error
    assert result.structured_content["success"] is True
    assert result.structured_content["created"] == {"entities": 3, "relations": 6, "observations": 9}
    assert result.structured_content["quality_score"] == 1.0
    graph = (await client.call_tool("read_graph", {})).structured_content
    assert len(graph["entities"]) == 3 and len(graph["relations"]) == 6
    # The official tools still show plain strings.
    assert graph["entities"][0]["observations"] == ["Works at Google", "Author of MCP Memory Server", "Uses Windows"]


@pytest.mark.anyio
async def test_the_spec_invalid_requests_fail_with_their_messages_and_save_nothing(client):
    too_long = {
        "entities": [
            {
                "name": "Test",
                "entityType": "Example",
                "observations": [
                    "This is a very long observation that contains multiple facts and exceeds the maximum allowed "
                    "length of 150 characters which will cause validation to fail"
                ],
                "relations": [{"targetEntity": "Other", "relationType": "related"}],
            }
        ],
        "threadId": "test",
    }
    result = await _save(client, too_long)
    assert result.is_error and result.structured_content["success"] is False
    problems = [error["problem"] for error in result.structured_content["validation_errors"]]
    assert any(problem.startswith("Observation too long (153 chars). Max 150.") for problem in problems)
    assert any("'Other' not found" in problem for problem in problems)
    isolated = copy.deepcopy(too_long)
    isolated["entities"][0].update(name="Isolated Entity", observations=["Some fact"], relations=[])
    result = await _save(client, isolated)
    (error,) = result.structured_content["validation_errors"]
    assert "Entity 'Isolated Entity' must have at least 1 relation" in error["problem"]
    assert (await client.call_tool("read_graph", {})).structured_content["entities"] == []


def test_broken_text_and_oversized_lists_are_problems_not_crashes(graph):
    outcome = saving.save_memory(
        graph,
        [
            _draft("A\ud800", ["B"]),
            _draft("B", ["A\ud800"], tuple(f"Fact number {i}" for i in range(1001))),
        ],
        "t",
    )
    problems = [p.problem for p in outcome.problems]
    assert any("unpaired surrogate" in problem for problem in problems)
    assert any("1001 observations, over the limit of 1000" in problem for problem in problems)
    assert graph.read_graph().entities == ()
