"""Duplicates named at write time, and found across the memory: an entity created under a name
that probably names one the memory holds (an alias, a nickname, initials, an acronym, a typo, one
name once normalised; of an agreeing type) is created, and the answer names the candidate and the
merge call that folds it; find_duplicates lists the pairs, best first. Precision first: on real
names with true and false pairs, on the search sets' entities, and through the real client."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import pytest
from benchmarks.retrieval.sets import load_meaning, load_quality
from mcp import Client

from graphmem.config import Settings
from graphmem.core.models import Entity
from graphmem.core.names import look_up, same_thing, types_agree
from graphmem.domain.duplicates import find_duplicates
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server import build_server
from graphmem.storage import open_store

PAIRS = json.loads((Path(__file__).parent / "fixtures" / "clean" / "duplicates.json").read_text())["pairs"]
MISSED = {"J.R.R. Tolkien", "UN", "CI", "Postgres", "user-service"}
"""True pairs the rules do not name: several initials, two-word acronyms, a short name's end, a plural."""


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return dataclasses.replace(any_backend_settings, semantic=False, toolset="all")


def _named(pair: dict) -> str | None:
    if not types_agree(pair["type"], pair["existingType"]):
        return None
    return same_thing(pair["name"], pair["existing"])


@pytest.mark.parametrize("pair", [p for p in PAIRS if not p["same"]], ids=lambda p: f"{p['name']}/{p['existing']}")
def test_different_things_are_never_named(pair):
    assert _named(pair) is None


@pytest.mark.parametrize(
    "pair",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="not a rule")) if p["name"] in MISSED else p
        for p in PAIRS
        if p["same"]
    ],
    ids=lambda p: f"{p['name']}/{p['existing']}",
)
def test_one_thing_under_two_names_is_named_and_found_by_a_shared_key(pair):
    assert _named(pair) is not None
    # The index looks a name up by its keys: a pair the rules name must share one.
    assert set(look_up(pair["name"])[1]) & set(look_up(pair["existing"])[0])


def test_names_alike_but_in_two_words_share_no_key():
    """A batch of names made alike ("batch person 3 17 done") must not meet each other under a
    key: each would be compared with every other, and a create of a hundred took 60 ms."""
    names = [f"batch person {i} {j} done" for i in range(20) for j in range(20)] + [
        f"Meeting with {given} about {topic}" for given in ("Ann", "Bob", "Eve") for topic in ("budget", "hiring")
    ]
    under: dict[object, set[str]] = {}
    for name in names:
        for key in look_up(name)[0]:
            under.setdefault(key, set()).add(name)
    for name in names:
        met = {other for key in look_up(name)[1] for other in under.get(key, ())} - {name}
        assert not met, f"{name!r} meets {sorted(met)[:3]}"


def test_nothing_is_named_among_distinct_entities_of_real_memories():
    for evaluation in (load_quality(), load_meaning()):
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(Settings(memory_path=Path(folder) / "memory.db", semantic=False))
            try:
                graph = KnowledgeGraph(store)
                entities = [entity for memory in evaluation.memories for entity in memory.entities]
                graph.import_graph(list({entity.name: entity for entity in entities}.values()), [])
                assert find_duplicates(graph) == []
            finally:
                store.close()


def test_what_is_named_in_a_set_written_by_other_hands_is_one_thing():
    """The set of entities with facts written for the meaning measure (benchmarks.meaning_duplicates),
    by a helper that had not seen the rules: loaded into one memory, every pair named is one of
    its true pairs (competitors, versions, father and son are never named)."""
    document = json.loads((Path(__file__).parent / "fixtures" / "clean" / "meaning_duplicates.json").read_text())
    true_pairs = {
        frozenset((pair["existing"]["name"], pair["new"]["name"])) for pair in document["pairs"] if pair["same"]
    }
    entities = [
        Entity(side["name"], side["type"], tuple(side["facts"]))
        for pair in document["pairs"]
        for side in (pair["existing"], pair["new"])
    ]
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Settings(memory_path=Path(folder) / "memory.db", semantic=False))
        try:
            graph = KnowledgeGraph(store)
            graph.import_graph(entities, [])
            named = {frozenset((duplicate.name, duplicate.existing)) for duplicate in find_duplicates(graph)}
        finally:
            store.close()
    assert named, "the set holds a pair the rules name (Dungeons & Dragons / D&D)"
    assert named <= true_pairs


def _notes(answer) -> str:
    return " ".join(item.text for item in answer.content[1:])


def _entities(*pairs: tuple[str, str]) -> dict:
    return {"entities": [{"name": name, "entityType": kind, "observations": []} for name, kind in pairs]}


@pytest.mark.anyio
async def test_a_create_names_what_it_may_duplicate_and_find_duplicates_merges_it(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        await client.call_tool(
            "create_entities",
            _entities(("Robert Smith", "person"), ("International Business Machines", "company"), ("Paris", "city")),
        )
        created = await client.call_tool(
            "create_entities", _entities(("Bob Smith", "Person"), ("Jane Smith", "person"), ("Paris, France", "place"))
        )
        assert [entity["name"] for entity in created.structured_content["entities"]] == [
            "Bob Smith",
            "Jane Smith",
            "Paris, France",
        ]
        note = _notes(created)
        assert '"Bob Smith" is probably "Robert Smith" (person; a nickname)' in note
        assert 'merge_entities {"source": "Bob Smith", "target": "Robert Smith"} folds it in' in note
        assert "Jane" not in note and "Paris" not in note
        upserted = await client.call_tool(
            "upsert_entities", {"entities": [{"name": "IBM", "entityType": "company", "observations": ["big"]}]}
        )
        assert '"IBM" is probably "International Business Machines" (company; its acronym)' in _notes(upserted)
        saved = await client.call_tool(
            "save_memory",
            {
                "threadId": "t1",
                "entities": [
                    {
                        "name": "Robert Simth",
                        "entityType": "person",
                        "observations": ["Writes the newsletter"],
                        "relations": [{"targetEntity": "Jane Smith", "relationType": "works with"}],
                    }
                ],
            },
        )
        assert saved.structured_content["success"] is True, saved.content[0].text
        assert '"Robert Simth" is probably "Robert Smith" (person; a typo of it)' in _notes(saved)

        found = await client.call_tool("find_duplicates", {})
        pairs = found.structured_content["pairs"]
        assert [(pair["names"], pair["why"]) for pair in pairs] == [
            (["Bob Smith", "Robert Smith"], "a nickname"),
            (["IBM", "International Business Machines"], "its acronym"),
            (["Robert Simth", "Robert Smith"], "a typo of it"),
        ]
        assert found.structured_content["total"] == 3
        merged = await client.call_tool("merge_entities", pairs[0]["merge"])
        assert not merged.is_error
        again = await client.call_tool("find_duplicates", {"limit": 1})
        assert again.structured_content["total"] == 2 and again.structured_content["nextOffset"] == 1
        assert [pair["names"][0] for pair in again.structured_content["pairs"]] == ["IBM"]


@pytest.mark.anyio
async def test_an_entity_of_another_project_is_no_candidate(settings: Settings):
    async with Client(build_server(settings), mode="legacy") as client:
        await client.call_tool("create_entities", {**_entities(("Robert Smith", "person")), "project": "api"})
        created = await client.call_tool("create_entities", {**_entities(("Bob Smith", "person")), "project": "web"})
        assert _notes(created) == ""
        shared = await client.call_tool("create_entities", {**_entities(("Rob Smith", "person")), "project": "api"})
        assert '"Rob Smith" is probably "Robert Smith"' in _notes(shared)
        # An upsert creates in the call's project too, and its note folds the new entity in.
        upserted = await client.call_tool(
            "upsert_entities",
            {"entities": [{"name": "R. Smith", "entityType": "person", "observations": ["x"]}], "project": "api"},
        )
        note = _notes(upserted)
        assert note.count("merge_entities {") == note.count('merge_entities {"source": "R. Smith"') > 0


@pytest.mark.anyio
async def test_the_notes_of_a_large_write_stay_short(settings: Settings):
    """However many candidates, secrets or contradictions a write meets, its notes name a few and count
    the rest: an answer is paid for in the model's context."""
    async with Client(build_server(settings), mode="legacy") as client:
        people = [(f"Robert Smith{suffix}", "person") for suffix in ("", " Jr")] + [
            (f"Robert Q{i} Smith", "person") for i in range(40)
        ]
        await client.call_tool("create_entities", _entities(*people))
        facts = [f"The team has {i} people" for i in range(60)]
        await client.call_tool(
            "create_entities", {"entities": [{"name": "Team", "entityType": "team", "observations": facts}]}
        )
        created = await client.call_tool(
            "create_entities",
            _entities(*[(f"Bob Q{i} Smith", "person") for i in range(40)]),
        )
        added = await client.call_tool(
            "add_observations",
            {
                "observations": [
                    {"entityName": "Team", "contents": [f"The team has {100 + i} people" for i in range(10)]}
                ]
            },
        )
        tokens = [f"ghp_{i:02d}" + "Zq3vR8tW1yK6mN2pL9xB4cD7fG0hJ5sA2eU" for i in range(30)]
        secret = await client.call_tool(
            "create_entities", {"entities": [{"name": "ci", "entityType": "service", "observations": tokens}]}
        )
    for answer, count in ((created, "And 37 more; find_duplicates lists them."), (secret, "and 25 more")):
        assert count in _notes(answer), _notes(answer)[:300]
    assert "And 27 more such pairs" in _notes(added)  # three facts named for each of ten
    for answer in (created, added, secret):
        assert len(_notes(answer)) < 1_500
