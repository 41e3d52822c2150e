"""The explorer's reads: who is asking, the overview, a type's entities, search, one entity,
its neighbours and paths, each bounded, and each refusal clear.

The app is the served one (guard, MCP endpoint and explorer) over a real SQLite memory;
`tests/helpers_explorer.py` says why no socket is opened here.
"""

from __future__ import annotations

import anyio
import pytest

from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.explorer.views import HUBS, MOST_FACTS, MOST_PAGE, PATH_DEPTH
from graphmem.storage import open_store
from tests.helpers_explorer import READER, WRITER, explorer_client, ok

pytestmark = pytest.mark.anyio


def fill(settings: Settings, entities: list[Entity], relations: list[Relation] | None = None) -> None:
    store = open_store(settings)
    try:
        graph = KnowledgeGraph(store)
        graph.import_graph(entities, relations or [])
    finally:
        store.close()


def a_team(settings: Settings) -> None:
    """Ada leads Atlas at Acme; Bob works on Atlas; Cy knows Bob; Dee knows nobody."""
    fill(
        settings,
        [
            Entity("Ada Lovelace", "person", ("leads the Atlas project", "prefers written reviews")),
            Entity("Bob Stone", "person", ("writes the Atlas parser",)),
            Entity("Cy Twombly", "person", ("paints on Sundays",)),
            Entity("Dee Dee", "person"),
            Entity("Atlas", "project", ("a map renderer",)),
            Entity("Acme", "organization", ("makes everything",)),
        ],
        [
            Relation("Ada Lovelace", "Atlas", "leads"),
            Relation("Ada Lovelace", "Acme", "works_at"),
            Relation("Bob Stone", "Atlas", "works_on"),
            Relation("Cy Twombly", "Bob Stone", "knows"),
        ],
    )


async def test_the_session_says_who_is_asking_what_they_may_do_and_how_big_the_memory_is(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as alice:
        session = await ok(alice.get("/api/session"))
    async with explorer_client(settings, token=READER) as ci:
        reader = await ok(ci.get("/api/session"))
    assert session["who"] == "alice" and session["canWrite"] is True
    assert reader["who"] == "ci" and reader["canWrite"] is False
    assert session["counts"] == {"entities": 6, "relations": 4, "observations": 6}


async def test_without_the_token_every_api_route_is_refused_but_the_page_is_served(settings: Settings):
    async with explorer_client(settings, token=None) as stranger:
        refused = [await stranger.get(f"/api/{route}") for route in ("session", "overview", "entity?name=Ada")]
        edit = await stranger.post("/api/facts/add", json={"name": "Ada", "texts": ["x"]})
        page = await stranger.get("/")
        wrong = await stranger.get("/api/session", headers={"authorization": "Bearer not-the-token-at-all"})
    for response in [*refused, edit, wrong]:
        assert response.status_code == 401
        assert "token" in response.json()["error"]
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


async def test_the_overview_counts_the_types_and_draws_the_most_connected_entities_with_their_relations(
    any_backend_settings: Settings,
):
    settings = any_backend_settings
    a_team(settings)
    async with explorer_client(settings) as client:
        overview = await ok(client.get("/api/overview"))
    assert overview["entityTypes"] == [
        {"type": "person", "count": 4},
        {"type": "organization", "count": 1},
        {"type": "project", "count": 1},
    ]
    assert [kind["type"] for kind in overview["relationTypes"]] == ["knows", "leads", "works_at", "works_on"]
    hubs = [(hub["name"], hub["degree"]) for hub in overview["hubs"]]
    # By degree; ties by name, the later first; a small memory shows even the unconnected.
    assert hubs == [
        ("Bob Stone", 2),
        ("Atlas", 2),
        ("Ada Lovelace", 2),
        ("Cy Twombly", 1),
        ("Acme", 1),
        ("Dee Dee", 0),
    ]
    assert len(overview["relations"]) == 4


async def test_the_overview_of_a_large_memory_holds_a_bounded_number_of_entities_and_relations(settings: Settings):
    people = [Entity(f"person {index}", f"type {index % 40}") for index in range(1200)]
    # A star: one hub with 1,199 relations, and the rest in a ring.
    relations = [Relation("person 0", f"person {index}", "knows") for index in range(1, 1200)]
    relations += [Relation(f"person {index}", f"person {index + 1}", "next") for index in range(1, 1199)]
    fill(settings, people, relations)
    async with explorer_client(settings) as client:
        overview = await ok(client.get("/api/overview"))
    assert len(overview["hubs"]) == HUBS
    assert overview["hubs"][0] == {"name": "person 0", "type": "type 0", "degree": 1199}
    assert len(overview["entityTypes"]) == 24 and overview["moreEntityTypes"] == 16
    shown = {hub["name"] for hub in overview["hubs"]}
    assert all(r["from"] in shown and r["to"] in shown for r in overview["relations"])


async def test_a_types_entities_come_a_page_at_a_time_most_connected_first_each_once(any_backend_settings: Settings):
    settings = any_backend_settings
    a_team(settings)
    async with explorer_client(settings) as client:
        first = await ok(client.get("/api/entities", params={"type": "person", "limit": 2}))
        second = await ok(client.get("/api/entities", params={"type": "person", "offset": 2, "limit": 2}))
        none = await ok(client.get("/api/entities", params={"type": "nobody"}))
    assert first["total"] == 4
    names = [card["name"] for card in first["entities"] + second["entities"]]
    assert names == ["Bob Stone", "Ada Lovelace", "Cy Twombly", "Dee Dee"]
    assert [card["degree"] for card in first["entities"] + second["entities"]] == [2, 2, 1, 0]
    assert first["relations"] == []  # Bob and Ada are not related to each other
    assert none == {"type": "nobody", "total": 0, "offset": 0, "entities": [], "relations": []}


async def test_search_ranks_as_search_nodes_does_and_says_which_fact_matched(settings: Settings):
    a_team(settings)
    settings = Settings(memory_path=settings.memory_path, semantic=False)
    async with explorer_client(settings) as client:
        found = await ok(client.get("/api/search", params={"q": "Atlas parser", "limit": 5}))
        people = await ok(client.get("/api/search", params={"q": "Atlas", "type": "person"}))
    store = open_store(settings)
    try:
        expected = [entity.name for entity in KnowledgeGraph(store).search_nodes("Atlas parser", limit=5).entities]
    finally:
        store.close()
    assert [result["name"] for result in found["results"]] == expected
    assert found["results"][0] == {
        "name": "Bob Stone",
        "type": "person",
        "degree": 2,
        "match": "writes the Atlas parser",
    }
    assert {result["type"] for result in people["results"]} == {"person"}


async def test_one_entity_shows_its_aliases_facts_and_the_history_of_a_corrected_fact(any_backend_settings: Settings):
    settings = any_backend_settings
    a_team(settings)
    store = open_store(settings)
    try:
        graph = KnowledgeGraph(store)
        with graph.authored_by("alice"):
            graph.add_observations([ObservationAddition("Ada Lovelace", ("prefers spoken reviews",), ("obs_2",))])
    finally:
        store.close()
    async with explorer_client(settings) as client:
        ada = await ok(client.get("/api/entity", params={"name": "Ada Lovelace"}))
    assert ada["type"] == "person" and ada["degree"] == 2
    assert ada["relations"] == {"outgoing": 2, "incoming": 0}
    assert [fact["text"] for fact in ada["facts"]] == ["leads the Atlas project", "prefers spoken reviews"]
    newest = ada["facts"][1]
    assert newest["author"] == "alice" and newest["supersedes"] == "obs_2" and newest["createdAt"]
    [old] = ada["history"]
    assert old["text"] == "prefers written reviews" and old["current"] is False
    assert old["supersededBy"] == newest["id"]


async def test_an_alias_finds_the_entity_and_an_unknown_name_is_a_404_that_says_so(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as client:
        renamed = await client.post("/api/entities/rename", json={"name": "Ada Lovelace", "newName": "Ada King"})
        by_alias = await ok(client.get("/api/entity", params={"name": "Ada Lovelace"}))
        missing = await client.get("/api/entity", params={"name": "Nobody"})
    assert renamed.status_code == 200
    assert by_alias["name"] == "Ada King" and by_alias["aliases"] == ["Ada Lovelace"]
    assert missing.status_code == 404 and "Nobody" in missing.json()["error"]


async def test_neighbours_page_through_every_relation_once_and_count_what_is_left(any_backend_settings: Settings):
    settings = any_backend_settings
    fill(
        settings,
        [Entity("hub", "thing"), *(Entity(f"n{index}", "thing") for index in range(7))],
        [
            *(Relation("hub", f"n{index}", "out") for index in range(4)),
            *(Relation(f"n{index}", "hub", "in") for index in range(4, 7)),
            Relation("hub", "hub", "self"),
            Relation("hub", "ghost", "out"),
        ],
    )
    seen, remaining, offset = [], [], 0
    async with explorer_client(settings) as client:
        while offset is not None:
            page = await ok(client.get("/api/neighbours", params={"name": "hub", "offset": offset, "limit": 3}))
            seen += [(r["from"], r["to"], r["relationType"]) for r in page["relations"]]
            remaining.append(page["remaining"])
            offset = page["nextOffset"]
        only_in = await ok(client.get("/api/neighbours", params={"name": "hub", "relationType": "in"}))
    assert page["total"] == 9
    assert sorted(seen) == sorted(
        [("hub", f"n{i}", "out") for i in range(4)]
        + [(f"n{i}", "hub", "in") for i in range(4, 7)]
        + [("hub", "hub", "self"), ("hub", "ghost", "out")]
    )
    assert remaining == sorted(remaining, reverse=True) and remaining[-1] == 0
    assert [card["name"] for card in only_in["neighbours"]] == ["n4", "n5", "n6"]
    ghost = await _card_of(settings, "ghost")
    assert ghost == {"name": "ghost", "type": None, "degree": 1}


async def _card_of(settings: Settings, name: str) -> dict[str, object]:
    async with explorer_client(settings) as client:
        page = await ok(client.get("/api/neighbours", params={"name": "hub", "limit": MOST_PAGE}))
    return next(card for card in page["neighbours"] if card["name"] == name)


async def test_the_path_between_two_entities_follows_relations_either_way(any_backend_settings: Settings):
    settings = any_backend_settings
    a_team(settings)
    async with explorer_client(settings) as client:
        path = await ok(client.get("/api/path", params={"from": "Cy Twombly", "to": "Acme"}))
        none = await ok(client.get("/api/path", params={"from": "Dee Dee", "to": "Acme"}))
    assert [card["name"] for card in path["entities"]] == ["Cy Twombly", "Bob Stone", "Atlas", "Ada Lovelace", "Acme"]
    assert path["relations"][0] == {"from": "Cy Twombly", "to": "Bob Stone", "relationType": "knows"}
    assert path["found"] is True and path["why"] is None and path["maxDepth"] == PATH_DEPTH
    assert none["found"] is False and "not connected" in none["why"]


@pytest.mark.parametrize(
    ("route", "status", "words"),
    [
        ("/api/entities", 400, "type is missing"),
        ("/api/entities?type=person&limit=0", 400, "limit: is 0"),
        (f"/api/entities?type=person&limit={MOST_PAGE + 1}", 400, f"from 1 to {MOST_PAGE}"),
        ("/api/entities?type=person&offset=-1", 400, "offset: is -1"),
        ("/api/neighbours?name=Atlas&limit=ten", 400, "whole number"),
        ("/api/search?q=%20", 400, "q: is empty"),
        ("/api/search?q=Atlas&limit=51", 400, "from 1 to 50"),
        (f"/api/search?q={'x' * 5000}", 400, "query"),
        ("/api/path?from=Atlas", 400, "to is missing"),
        ("/api/path?from=Atlas&to=Nobody", 404, "Nobody"),
        ("/api/neighbours?name=Nobody", 404, "Nobody"),
        ("/api/nothing-here", 404, "No route /api/nothing-here"),
    ],
)
async def test_a_bad_read_gets_a_status_and_a_message_that_says_what_to_send(
    settings: Settings, route: str, status: int, words: str
):
    a_team(settings)
    async with explorer_client(settings) as client:
        response = await client.get(route)
    assert response.status_code == status, response.text
    if words:
        assert words in response.json()["error"]


async def test_the_page_and_its_files_carry_a_policy_that_runs_only_their_own_scripts(settings: Settings):
    async with explorer_client(settings, token=None) as client:
        library = await client.get("/explorer/vendor/cytoscape.min.js")
        again = await client.get(
            "/explorer/vendor/cytoscape.min.js", headers={"if-none-match": library.headers["etag"]}
        )
        escape = await client.get(
            "/explorer/%2e%2e/%2e%2e/pyproject.toml", headers={"authorization": f"Bearer {WRITER}"}
        )
        missing = await client.get("/explorer/nothing.js", headers={"authorization": f"Bearer {WRITER}"})
    assert library.status_code == 200 and library.headers["content-type"].startswith("text/javascript")
    assert "script-src" not in library.headers["content-security-policy"]  # default-src 'self' covers scripts
    assert "default-src 'self'" in library.headers["content-security-policy"]
    assert library.headers["x-content-type-options"] == "nosniff"
    assert again.status_code == 304
    assert escape.status_code == 404 and missing.status_code == 404


async def test_a_foreign_host_or_origin_is_refused_before_any_route(settings: Settings):
    async with explorer_client(settings) as client:
        rebound = await client.get("/api/session", headers={"host": "evil.example"})
        page = await client.get("/", headers={"host": "evil.example"})
        foreign = await client.post(
            "/api/facts/add", json={"name": "Ada", "texts": ["x"]}, headers={"origin": "https://evil.example"}
        )
    assert rebound.status_code == 421 and page.status_code == 421
    assert foreign.status_code == 403 and "Origin" in foreign.json()["error"]


async def test_answers_about_the_memory_are_never_cached(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as client:
        response = await client.get("/api/overview")
    assert response.headers["cache-control"] == "no-store"


async def test_reads_answer_while_other_reads_run(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as client:
        answers: list[int] = []

        async def read(route: str) -> None:
            answers.append((await client.get(route)).status_code)

        async with anyio.create_task_group() as tasks:
            for _ in range(10):
                for route in ("/api/overview", "/api/entity?name=Atlas", "/api/search?q=Atlas"):
                    tasks.start_soon(read, route)
    assert answers == [200] * 30


async def test_an_entity_with_very_many_facts_answers_with_the_first_few_hundred_and_counts_the_rest(
    settings: Settings,
):
    fill(settings, [Entity("Diary", "document", tuple(f"entry {index}" for index in range(MOST_FACTS + 30)))])
    async with explorer_client(settings) as client:
        diary = await ok(client.get("/api/entity", params={"name": "Diary"}))
    assert len(diary["facts"]) == MOST_FACTS and diary["factsTotal"] == MOST_FACTS + 30
    assert diary["facts"][0]["text"] == "entry 0"
    assert diary["history"] == [] and diary["historyTotal"] == 0


async def test_the_overview_follows_every_write_whoever_makes_it(any_backend_settings: Settings):
    settings = any_backend_settings
    a_team(settings)
    async with explorer_client(settings) as client:
        before = await ok(client.get("/api/overview"))
        again = await ok(client.get("/api/overview"))
        # Another writer (an agent through its own store, another server) makes Dee the hub.
        store = open_store(settings)
        try:
            KnowledgeGraph(store).create_relations(
                [Relation("Dee Dee", name, "knows") for name in ("Atlas", "Acme", "Bob Stone")]
            )
        finally:
            store.close()
        after = await ok(client.get("/api/overview"))
    assert again == before
    assert after["hubs"][0] == {"name": "Dee Dee", "type": "person", "degree": 3}
    assert after["counts"]["relations"] == before["counts"]["relations"] + 3


async def test_the_duplicates_view_lists_probable_pairs_surest_first_and_a_merge_folds_one(settings: Settings):
    fill(
        settings,
        [
            Entity("Robert Smith", "person", ("Runs billing",)),
            Entity("International Business Machines", "company"),
            Entity("Bob Smith", "person", ("Approves refunds",)),
            Entity("Jane Smith", "person"),
            Entity("IBM", "company"),
        ],
    )
    async with explorer_client(settings) as alice:
        page = await ok(alice.get("/api/duplicates"))
        assert page == {
            "pairs": [
                {"name": "Bob Smith", "existing": "Robert Smith", "type": "person", "why": "a nickname"},
                {"name": "IBM", "existing": "International Business Machines", "type": "company", "why": "its acronym"},
            ],
            "total": 2,
            "offset": 0,
        }
        await ok(alice.post("/api/entities/merge", json={"source": "Bob Smith", "target": "Robert Smith"}))
        after = await ok(alice.get("/api/duplicates"))
    assert [pair["name"] for pair in after["pairs"]] == ["IBM"]
