"""The explorer's corrections: each is the tool an agent would call, authored by the token,
refused whole for a read-only token or a bad body, and reported back with the entity as it is now.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.config import Settings
from graphmem.core.models import Graph
from graphmem.domain.graph import KnowledgeGraph
from graphmem.explorer.routes import MAX_EDIT_BYTES
from graphmem.storage import open_store
from tests.explorer.test_reads import a_team
from tests.helpers_explorer import READER, explorer_client, ok

pytestmark = pytest.mark.anyio


def stored(settings: Settings) -> Graph:
    store = open_store(settings)
    try:
        return KnowledgeGraph(store).read_graph()
    finally:
        store.close()


def facts_of(graph: Graph, name: str) -> list[str]:
    return list(next(entity for entity in graph.entities if entity.name == name).observations)


async def test_correcting_a_fact_keeps_the_old_version_in_the_history_with_who_corrected_it(
    any_backend_settings: Settings,
):
    settings = any_backend_settings
    a_team(settings)
    async with explorer_client(settings) as alice:
        before = await ok(alice.get("/api/entity", params={"name": "Ada Lovelace"}))
        old = before["facts"][1]
        answer = await ok(
            alice.post("/api/facts/edit", json={"name": "Ada Lovelace", "id": old["id"], "text": "prefers calls"})
        )
    ada = answer["entity"]
    assert answer["message"] == "Saved."
    assert [fact["text"] for fact in ada["facts"]] == ["leads the Atlas project", "prefers calls"]
    assert ada["facts"][1]["supersedes"] == old["id"] and ada["facts"][1]["author"] == "alice"
    assert ada["history"][0]["text"] == old["text"] and ada["history"][0]["supersededBy"] == ada["facts"][1]["id"]
    assert ada["updatedBy"] == "alice"
    assert facts_of(stored(settings), "Ada Lovelace") == ["leads the Atlas project", "prefers calls"]


async def test_adding_and_deleting_facts_change_the_stored_entity(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as alice:
        await ok(alice.post("/api/facts/add", json={"name": "Atlas", "texts": ["ships in May", "uses WebGL"]}))
        answer = await ok(alice.post("/api/facts/delete", json={"name": "Atlas", "texts": ["a map renderer"]}))
    assert [fact["text"] for fact in answer["entity"]["facts"]] == ["ships in May", "uses WebGL"]
    assert facts_of(stored(settings), "Atlas") == ["ships in May", "uses WebGL"]


async def test_relations_are_added_and_deleted_and_the_answer_shows_their_source(settings: Settings):
    a_team(settings)
    knows = {"from": "Dee Dee", "to": "Ada Lovelace", "relationType": "knows"}
    async with explorer_client(settings) as alice:
        added = await ok(alice.post("/api/relations/add", json=knows))
        after_add = stored(settings)
        deleted = await ok(alice.post("/api/relations/delete", json=knows))
    assert added["entity"]["name"] == "Dee Dee" and added["entity"]["relations"] == {"outgoing": 1, "incoming": 0}
    assert ("Dee Dee", "Ada Lovelace", "knows") in {relation.key for relation in after_add.relations}
    assert deleted["entity"]["relations"] == {"outgoing": 0, "incoming": 0}
    assert ("Dee Dee", "Ada Lovelace", "knows") not in {relation.key for relation in stored(settings).relations}


async def test_a_relation_to_a_name_that_is_no_entity_says_so_in_a_note(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as alice:
        answer = await ok(
            alice.post("/api/relations/add", json={"from": "Atlas", "to": "Zeus", "relationType": "uses"})
        )
    assert any("Zeus" in note for note in answer["notes"])


async def test_an_entity_is_added_renamed_and_merged_into_another(any_backend_settings: Settings):
    settings = any_backend_settings
    a_team(settings)
    async with explorer_client(settings) as alice:
        added = await ok(alice.post("/api/entities/add", json={"name": "Ada L.", "type": "person", "texts": ["x"]}))
        renamed = await ok(alice.post("/api/entities/rename", json={"name": "Ada L.", "newName": "A. Lovelace"}))
        merged = await ok(alice.post("/api/entities/merge", json={"source": "A. Lovelace", "target": "Ada Lovelace"}))
    assert added["entity"]["facts"][0]["text"] == "x" and added["entity"]["createdBy"] == "alice"
    assert renamed["entity"]["name"] == "A. Lovelace" and renamed["entity"]["aliases"] == ["Ada L."]
    ada = merged["entity"]
    assert ada["name"] == "Ada Lovelace" and {"A. Lovelace", "Ada L."} <= set(ada["aliases"])
    assert "x" in [fact["text"] for fact in ada["facts"]]
    assert "A. Lovelace" not in {entity.name for entity in stored(settings).entities}


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("facts/add", {"name": "Atlas", "texts": ["new"]}),
        ("facts/edit", {"name": "Atlas", "id": "obs_1", "text": "new"}),
        ("facts/delete", {"name": "Atlas", "texts": ["a map renderer"]}),
        ("relations/add", {"from": "Atlas", "to": "Acme", "relationType": "owned_by"}),
        ("relations/delete", {"from": "Bob Stone", "to": "Atlas", "relationType": "works_on"}),
        ("entities/add", {"name": "New", "type": "thing"}),
        ("entities/rename", {"name": "Atlas", "newName": "Atlas 2"}),
        ("entities/merge", {"source": "Bob Stone", "target": "Cy Twombly"}),
    ],
)
async def test_a_read_only_token_may_not_edit_and_is_told_to_ask_for_a_write_token(
    settings: Settings, route: str, body: dict[str, Any]
):
    a_team(settings)
    before = stored(settings)
    async with explorer_client(settings, token=READER) as ci:
        refused = await ci.post(f"/api/{route}", json=body)
    assert refused.status_code == 403
    assert "may only read" in refused.json()["error"] and "write token" in refused.json()["error"]
    assert stored(settings) == before


@pytest.mark.parametrize(
    ("route", "body", "status", "words"),
    [
        ("facts/add", {"name": "Atlas"}, 400, "texts"),
        ("facts/add", {"name": "Atlas", "texts": []}, 400, "texts"),
        ("facts/add", {"name": "Atlas", "texts": [3]}, 400, "texts"),
        ("facts/add", {"name": "Nobody", "texts": ["x"]}, 404, "Nobody"),
        ("facts/add", {"name": "Atlas", "texts": ["x" * 100_000]}, 400, "observations"),
        ("facts/edit", {"name": "Atlas", "id": "obs_9", "text": "x"}, 400, "obs_9"),
        ("facts/edit", {"name": "Atlas", "text": "x"}, 400, "id"),
        ("relations/add", {"from": "Atlas", "to": "Acme"}, 400, "relationType"),
        ("entities/add", {"name": "Atlas", "type": "project"}, 409, "exists already"),
        ("relations/add", {"from": "Ada Lovelace", "to": "Atlas", "relationType": "leads"}, 409, "exists already"),
        ("entities/rename", {"name": "Atlas", "newName": "Acme"}, 400, "Acme"),
        ("entities/merge", {"source": "Atlas", "target": "Atlas"}, 400, "Atlas"),
        ("entities/merge", {"source": "Nobody", "target": "Atlas"}, 404, "Nobody"),
        ("facts/add", [1, 2], 400, "one JSON object"),
        ("facts/add", {"name": "Atlas", "texts": ["a map renderer"]}, 409, "nothing was added"),
        ("facts/delete", {"name": "Atlas", "texts": ["not a fact of Atlas"]}, 404, "nothing was deleted"),
        ("facts/delete", {"name": "Nobody", "texts": ["x"]}, 404, "Nobody"),
        ("relations/delete", {"from": "Atlas", "to": "Acme", "relationType": "nope"}, 404, "nothing was deleted"),
    ],
)
async def test_a_bad_edit_changes_nothing_and_says_what_to_send(
    settings: Settings, route: str, body: Any, status: int, words: str
):
    a_team(settings)
    before = stored(settings)
    async with explorer_client(settings) as alice:
        response = await alice.post(f"/api/{route}", json=body)
    assert response.status_code == status, response.text
    assert words in response.json()["error"]
    assert stored(settings) == before


async def test_deleting_two_facts_of_which_one_is_there_says_how_many_were_deleted(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as alice:
        answer = await ok(
            alice.post("/api/facts/delete", json={"name": "Ada Lovelace", "texts": ["prefers written reviews", "gone"]})
        )
    assert answer["message"] == "Deleted 1 of 2 facts; the rest were not there."
    assert facts_of(stored(settings), "Ada Lovelace") == ["leads the Atlas project"]


async def test_an_edit_that_is_not_json_or_too_large_is_refused_before_it_is_read(settings: Settings):
    a_team(settings)
    before = stored(settings)
    async with explorer_client(settings) as alice:
        form = await alice.post("/api/facts/add", data={"name": "Atlas", "texts": "x"})
        broken = await alice.post("/api/facts/add", content=b"{", headers={"content-type": "application/json"})
        huge = await alice.post(
            "/api/facts/add",
            content=b'{"name": "Atlas", "texts": ["' + b"x" * (MAX_EDIT_BYTES + 1) + b'"]}',
            headers={"content-type": "application/json"},
        )
        read_as_write = await alice.get("/api/facts/add")
    assert form.status_code == 400 and "application/json" in form.json()["error"]
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]
    assert huge.status_code == 413 and "KB" in huge.json()["error"]
    assert read_as_write.status_code == 405
    assert stored(settings) == before


async def test_without_tokens_on_loopback_the_explorer_may_edit_and_records_no_author(settings: Settings):
    a_team(settings)
    async with explorer_client(settings, credentials=(), token=None) as local:
        session = await ok(local.get("/api/session"))
        answer = await ok(local.post("/api/facts/add", json={"name": "Atlas", "texts": ["local note"]}))
    assert session["canWrite"] is True and session["who"] is None
    assert answer["entity"]["facts"][-1]["author"] is None


NASTY_BODIES = [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"name": "\\ud800", "texts": ["x"]}',
    b'{"name": "Atlas\\u0000", "texts": ["\\udfff"]}',
    b'{"name": 1e999, "texts": ["x"]}',
    b'{"name": "Atlas", "texts": ["x"], "name": "Acme"}',
    b"\xff\xfe\x00",
    b'{"from": "Atlas", "to": "Atlas", "relationType": "' + b"r" * 200_000 + b'"}',
    b"",
]


@pytest.mark.parametrize("body", NASTY_BODIES, ids=range(len(NASTY_BODIES)))
@pytest.mark.parametrize("route", ["facts/add", "facts/edit", "relations/add", "entities/merge"])
async def test_no_body_a_page_can_send_makes_the_server_fail_or_hang(settings: Settings, route: str, body: bytes):
    a_team(settings)
    before = stored(settings)
    async with explorer_client(settings) as alice:
        response = await alice.post(f"/api/{route}", content=body, headers={"content-type": "application/json"})
        still = await alice.get("/api/session")
    assert response.status_code < 500, response.text
    assert "error" in response.json() or response.status_code == 200
    assert still.status_code == 200
    if response.status_code != 200:
        assert stored(settings) == before


@pytest.mark.parametrize(
    "route",
    [
        "/api/entity?name=%ED%A0%80",
        "/api/entity?name=%00",
        "/api/search?q=%ED%A0%80",
        "/api/neighbours?name=Atlas&offset=99999999999999999999999",
        "/api/neighbours?name=Atlas&offset=" + "9" * 5000,
        "/api/entities?type=person&limit=-5",
        "/api/path?from=Atlas&to=Atlas",
        "/api/search?q=" + "%22" * 300,
    ],
)
async def test_no_address_a_page_can_ask_for_makes_the_server_fail(settings: Settings, route: str):
    a_team(settings)
    async with explorer_client(settings) as alice:
        response = await alice.get(route)
    assert response.status_code < 500, response.text
    assert isinstance(response.json(), dict)


async def test_a_name_with_a_lone_surrogate_from_an_old_file_is_shown_not_a_crash(tmp_path):
    # The official server wrote what JavaScript strings hold, lone surrogates included.
    memory = tmp_path / "old.jsonl"
    memory.write_text(
        '{"type":"entity","name":"Odd \\ud800 name","entityType":"thing","observations":["half \\udc00 a pair"]}\n',
        encoding="utf-8",
    )
    settings = Settings(memory_path=memory, semantic=False)
    async with explorer_client(settings) as alice:
        overview = await ok(alice.get("/api/overview"))
        found = await ok(alice.get("/api/search", params={"q": "half"}))
    assert overview["hubs"][0]["name"] == "Odd \ud800 name"
    assert found["results"][0]["match"] == "half \udc00 a pair"
