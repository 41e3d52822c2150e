"""Contradictions named at write time: a new fact that probably contradicts a current fact of the
same entity (another value of a single-valued attribute, a negation, a changed number) is written,
and the answer names the fact and the call that makes the new one replace it. Precision first:
on hand-written true and false pairs, on real memories' facts, and through the real client on
every backend."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest
from benchmarks.retrieval.sets import load_meaning, load_quality
from mcp import Client

from graphmem.config import Settings
from graphmem.core.contradictions import contradiction
from graphmem.server import build_server

PAIRS = json.loads((Path(__file__).parent / "fixtures" / "clean" / "contradictions.json").read_text())["pairs"]
MISSED = {"Is no longer vegetarian"}
"""True contradictions the rules do not name (a negation of part of a longer fact)."""


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return dataclasses.replace(any_backend_settings, semantic=False, toolset="all")


@pytest.mark.parametrize("pair", [p for p in PAIRS if not p["contradicts"]], ids=lambda p: p["new"][:40])
def test_facts_that_merely_share_words_are_never_named(pair):
    assert contradiction(pair["new"], pair["current"]) is None


@pytest.mark.parametrize(
    "pair",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="a negation of part of a longer fact"))
        if p["new"] in MISSED
        else p
        for p in PAIRS
        if p["contradicts"]
    ],
    ids=lambda p: p["new"][:40],
)
def test_true_contradictions_are_named_with_their_rule(pair):
    found = contradiction(pair["new"], pair["current"])
    assert found is not None
    assert found.rule in ("another value", "a negation", "a changed number")


def test_nothing_is_named_among_facts_written_to_be_true_together():
    for evaluation in (load_quality(), load_meaning()):
        for memory in evaluation.memories:
            for entity in memory.entities:
                for new, current in itertools.permutations(entity.observations, 2):
                    assert contradiction(new, current) is None, (entity.name, new, current)


def _notes(answer) -> str:
    return " ".join(item.text for item in answer.content[1:])


@pytest.mark.anyio
async def test_a_write_names_what_it_may_contradict_and_the_call_that_replaces_it(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        facts = ["Works at Acme", "Eats fish", "Likes tea", "The team has 12 people"]
        await client.call_tool(
            "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": facts}]}
        )
        added = await client.call_tool(
            "add_observations",
            {"observations": [{"entityName": "Ada", "contents": ["Works at Initech", "Likes coffee"]}]},
        )
        assert added.structured_content == {
            "results": [{"entityName": "Ada", "addedObservations": ["Works at Initech", "Likes coffee"]}]
        }
        note = _notes(added)
        assert '"Works at Initech" may contradict obs_1 "Works at Acme" of Ada (another value: works at)' in note
        assert "Likes" not in note
        # The call the note gives makes the new fact the old one's next version.
        replacing = json.loads(note.split("call add_observations with ", 1)[1].split("}]}", 1)[0] + "}]}")
        assert replacing == {
            "observations": [{"entityName": "Ada", "contents": ["Works at Initech"], "supersedes": ["obs_1"]}]
        }
        replaced = await client.call_tool("add_observations", replacing)
        assert not replaced.is_error and _notes(replaced) == ""
        opened = await client.call_tool("open_nodes", {"names": ["Ada"]})
        assert opened.structured_content["entities"][0]["observations"] == [
            "Eats fish",
            "Likes tea",
            "The team has 12 people",
            "Works at Initech",
            "Likes coffee",
        ]
        history = await client.call_tool("get_observation_history", {"entityName": "Ada", "observationId": "obs_5"})
        assert "Works at Acme" in json.dumps(history.structured_content)
        upserted = await client.call_tool(
            "upsert_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["Does not eat fish"]}]},
        )
        assert '"Does not eat fish" may contradict obs_2 "Eats fish" of Ada (a negation: eat fish)' in _notes(upserted)
        saved = await client.call_tool(
            "save_memory",
            {
                "threadId": "t1",
                "entities": [
                    {
                        "name": "Ada",
                        "entityType": "person",
                        "observations": ["The team has 15 people"],
                        "relations": [{"targetEntity": "Ada", "relationType": "knows"}],
                    }
                ],
            },
        )
        assert 'may contradict obs_4 "The team has 12 people" of Ada (a changed number' in _notes(saved)


@pytest.mark.anyio
async def test_facts_of_different_times_contradict_nothing(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        await client.call_tool(
            "create_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["[2023-01-10] Works at Acme"]}]},
        )
        await client.call_tool(
            "add_observations",
            {"observations": [{"entityName": "Ada", "contents": ["Lives in Paris"], "validUntil": "2030"}]},
        )
        added = await client.call_tool(
            "add_observations",
            {
                "observations": [
                    {"entityName": "Ada", "contents": ["[2024-06-01] Works at Initech"]},
                    {"entityName": "Ada", "contents": ["Lives in Berlin"], "validFrom": "2031"},
                ]
            },
        )
        assert _notes(added) == ""
