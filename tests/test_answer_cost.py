"""What the answers of graphmem's own read tools leave out, because no agent reads it.

An agent pays for every byte of an answer it reads. An entity never changed since it was
created needs no `updatedAt` (the same time again) and no `version` (1); an observation record
needs no `version` 1 and no `createdAt` that its entity already shows. The official nine keep
their exact answers (tests/test_differential.py).
"""

from __future__ import annotations

import dataclasses

import pytest
from mcp import Client

from graphmem.server import build_server

pytestmark = pytest.mark.anyio


async def _call(client: Client, tool: str, arguments: dict) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_an_entity_never_changed_is_shown_without_an_update_time_or_version(settings):
    people = [{"name": name, "entityType": "person", "observations": ["Lives in Oslo"]} for name in ("Ann", "Bob")]
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await _call(client, "create_entities", {"entities": people})
        await _call(client, "create_relations", {"relations": [{"from": "Bob", "to": "Ann", "relationType": "knows"}]})
        context = await _call(client, "get_context_info", {"entityNames": ["Bob"]})
        neighbours = await _call(client, "get_neighbors", {"name": "Bob"})
    for entity in context["entities"]:
        assert list(entity) == ["name", "entityType", "observations", "createdAt"]
    assert [list(entity) for entity in neighbours["entities"]] == [
        ["name", "entityType", "observations", "createdAt", "distance"]
    ]


async def test_a_changed_entity_shows_its_update_time_and_version(settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await _call(
            client, "create_entities", {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}
        )
        await _call(client, "update_entities", {"entities": [{"name": "Bob", "entityType": "human"}]})
        (bob,) = (await _call(client, "get_context_info", {"entityNames": ["Bob"]}))["entities"]
    assert bob["version"] == 2
    assert bob["updatedAt"] >= bob["createdAt"]


async def test_observation_records_leave_out_what_their_entity_already_says(settings):
    async with Client(build_server(dataclasses.replace(settings, toolset="all")), mode="legacy") as client:
        await _call(
            client,
            "create_entities",
            {"entities": [{"name": "Bob", "entityType": "person", "observations": ["Lives in Oslo"]}]},
        )
        created = await _call(client, "get_entity", {"name": "Bob"})
        await _call(
            client,
            "add_observations",
            {"observations": [{"entityName": "Bob", "contents": ["Lives in Bergen"], "supersedes": ["obs_1"]}]},
        )
        corrected = await _call(client, "get_entity", {"name": "Bob"})
    assert created["observationRecords"] == [{"id": "obs_1", "content": "Lives in Oslo"}]
    (record,) = corrected["observationRecords"]
    # A correction is a new version, and says what it corrected.
    assert (record["content"], record["version"], record["supersedes"]) == ("Lives in Bergen", 2, "obs_1")
