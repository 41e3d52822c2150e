"""Projects in the explorer: every route runs in the project its request names (the `project`
parameter, else the header, else the token's, else the server's), a token limited to projects
is refused the others, the session lists the projects to choose from, and an entity moves.

The memory: Alice is shared; project api (`github.com/acme/api`) holds its README, the server
and some notes; project tool holds its own README. Alice wrote both READMEs.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.config import Settings
from graphmem.core.identity import Identity
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import EVERY, Scope
from graphmem.credentials import Credential
from graphmem.domain.graph import KnowledgeGraph
from graphmem.project_resolution import ProjectChoice
from graphmem.storage import open_store
from tests.explorer.test_reads import a_team
from tests.helpers_explorer import READER, TEAM, explorer_client, ok

pytestmark = pytest.mark.anyio

API, TOOL = Scope("github.com/acme/api"), Scope("tool")
DOCS_BOT = "docs-bot-token-0123456789abcdef"
WITH_DOCS_BOT = (*TEAM, Credential(DOCS_BOT, Identity("docs-bot", can_write=True, projects=(API.home,))))
"""alice may write everywhere, ci may only read, docs-bot may write in api (and read the shared space)."""


def two_projects(settings: Settings) -> None:
    store = open_store(settings)
    try:
        graph = KnowledgeGraph(store)
        graph.create_entities([Entity("Alice", "person", ("reviews code",))])
        with graph.working_in(API):
            graph.create_entities(
                [
                    Entity("README", "file", ("explains the api",)),
                    Entity("server", "service", ("answers requests",)),
                    Entity("notes", "document", ("meeting notes",)),
                ]
            )
            graph.create_relations([Relation("Alice", "README", "wrote"), Relation("README", "server", "describes")])
        with graph.working_in(TOOL):
            graph.create_entities([Entity("README", "file", ("explains the tool",))])
            graph.create_relations([Relation("Alice", "README", "wrote")])
    finally:
        store.close()


def where_each_is(settings: Settings) -> dict[str, list[str]]:
    """Each entity's name with the projects (keys) that hold one of that name, as stored."""
    store = open_store(settings)
    try:
        graph = KnowledgeGraph(store)
        with graph.working_in(EVERY):
            entities = graph.read_graph().entities
    finally:
        store.close()
    held: dict[str, list[str]] = {}
    for entity in entities:
        held.setdefault(entity.name, []).append(entity.project)
    return {name: sorted(projects) for name, projects in held.items()}


def cards(answer: dict[str, Any], key: str) -> list[tuple[str, str | None]]:
    return sorted((card["name"], card.get("project")) for card in answer[key])


async def test_the_project_parameter_chooses_what_the_overview_and_search_show(any_backend_settings: Settings):
    settings = any_backend_settings
    two_projects(settings)
    async with explorer_client(settings) as alice:
        api = await ok(alice.get("/api/overview", params={"project": "api"}))
        tool = await ok(alice.get("/api/overview", params={"project": "tool"}))
        every = await ok(alice.get("/api/overview", params={"project": "*"}))
        found_in_tool = await ok(alice.get("/api/search", params={"q": "explains", "project": "tool"}))
        found_everywhere = await ok(alice.get("/api/search", params={"q": "explains", "project": "*"}))
        by_key = await ok(alice.get("/api/search", params={"q": "explains", "project": "github.com/acme/api"}))
    assert cards(api, "hubs") == [("Alice", "shared"), ("README", "api"), ("notes", "api"), ("server", "api")]
    assert api["counts"] == {"entities": 4, "relations": 2, "observations": 4}
    assert cards(tool, "hubs") == [("Alice", "shared"), ("README", "tool")]
    assert {(relation["from"], relation["to"]) for relation in tool["relations"]} == {("Alice", "README")}
    assert every["counts"]["entities"] == 5
    assert [(hit["name"], hit["project"]) for hit in found_in_tool["results"]] == [("README", "tool")]
    assert found_in_tool["results"][0]["match"] == "explains the tool"
    assert sorted((hit["name"], hit["project"]) for hit in found_everywhere["results"]) == [
        ("README", "api"),
        ("README", "tool"),
    ]
    assert [(hit["name"], hit["match"]) for hit in by_key["results"]] == [("README", "explains the api")]


async def test_each_projects_overview_is_kept_apart_and_follows_a_write(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        api = await ok(alice.get("/api/overview", params={"project": "api"}))
        tool = await ok(alice.get("/api/overview", params={"project": "tool"}))
        api_again = await ok(alice.get("/api/overview", params={"project": "api"}))
        await ok(alice.post("/api/entities/add", params={"project": "tool"}, json={"name": "cli", "type": "file"}))
        tool_after = await ok(alice.get("/api/overview", params={"project": "tool"}))
        api_after = await ok(alice.get("/api/overview", params={"project": "api"}))
    assert api_again == api != tool
    assert ("cli", "tool") in cards(tool_after, "hubs")
    assert api_after["hubs"] == api["hubs"]


async def test_the_header_names_the_project_when_the_address_does_not(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        by_header = await ok(alice.get("/api/search", params={"q": "explains"}, headers={"x-graphmem-project": "tool"}))
        address_wins = await ok(
            alice.get("/api/search", params={"q": "explains", "project": "api"}, headers={"x-graphmem-project": "tool"})
        )
        session = await ok(alice.get("/api/session", headers={"x-graphmem-project": "tool"}))
    assert [hit["match"] for hit in by_header["results"]] == ["explains the tool"]
    assert [hit["match"] for hit in address_wins["results"]] == ["explains the api"]
    assert session["project"] == "tool" and session["projectKey"] == "tool"


async def test_a_server_in_a_project_shows_it_unless_the_page_asks_for_another(tmp_path):
    settings = Settings(memory_path=tmp_path / "memory.db", project=ProjectChoice(API.home, "api", "a test"))
    two_projects(settings)
    async with explorer_client(settings) as alice:
        session = await ok(alice.get("/api/session"))
        overview = await ok(alice.get("/api/overview"))
        every = await ok(alice.get("/api/session", params={"project": "*"}))
        readme = await ok(alice.get("/api/entity", params={"name": "README"}))
    assert (session["project"], session["projectKey"]) == ("api", "github.com/acme/api")
    assert session["counts"]["entities"] == 4
    assert ("README", "tool") not in cards(overview, "hubs")
    assert (every["project"], every["projectKey"], every["counts"]["entities"]) == (None, None, 5)
    assert readme["facts"][0]["text"] == "explains the api"


async def test_the_session_lists_the_projects_to_choose_from_with_their_entities(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        session = await ok(alice.get("/api/session"))
    assert session["project"] is None and session["projectKey"] is None and session["allProjects"] is True
    assert session["projects"] == [
        {"name": "shared", "key": "", "entities": 1},
        {"name": "api", "key": "github.com/acme/api", "entities": 3},
        {"name": "tool", "key": "tool", "entities": 1},
    ]
    assert session["counts"]["entities"] == 5


async def test_the_entity_says_its_project_and_a_listed_neighbour_its_own(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        readme = await ok(alice.get("/api/entity", params={"name": "README", "project": "tool"}))
        alice_entity = await ok(alice.get("/api/entity", params={"name": "Alice", "project": "tool"}))
        neighbours = await ok(alice.get("/api/neighbours", params={"name": "Alice", "project": "api"}))
        path = await ok(alice.get("/api/path", params={"from": "Alice", "to": "server", "project": "api"}))
        shared_only = await ok(alice.get("/api/overview", params={"project": "shared"}))
    assert (readme["project"], readme["projectKey"]) == ("tool", "tool")
    assert readme["facts"][0]["text"] == "explains the tool"
    assert (alice_entity["project"], alice_entity["projectKey"]) == ("shared", "")
    assert cards(neighbours, "neighbours") == [("README", "api")]
    assert [(card["name"], card["project"]) for card in path["entities"]] == [
        ("Alice", "shared"),
        ("README", "api"),
        ("server", "api"),
    ]
    # The shared space alone shows one project: no entity needs to say where it lives.
    assert shared_only["hubs"] == [{"name": "Alice", "type": "person", "degree": 0}]


async def test_a_memory_without_projects_answers_as_before(settings: Settings):
    a_team(settings)
    async with explorer_client(settings) as alice:
        session = await ok(alice.get("/api/session"))
        overview = await ok(alice.get("/api/overview"))
        found = await ok(alice.get("/api/search", params={"q": "Atlas"}))
        ada = await ok(alice.get("/api/entity", params={"name": "Ada Lovelace"}))
    assert session["projects"] == [{"name": "shared", "key": "", "entities": 6}] and session["project"] is None
    assert all("project" not in card for card in overview["hubs"])
    assert found["results"] and all("project" not in hit for hit in found["results"])
    assert ada["project"] == "shared"


async def test_an_unknown_project_is_a_400_that_names_the_projects_and_changes_nothing(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        read = await alice.get("/api/overview", params={"project": "nope"})
        edit = await alice.post("/api/entities/add", params={"project": "nope"}, json={"name": "typo", "type": "thing"})
    assert read.status_code == 400 and edit.status_code == 400
    assert "no project is named 'nope' (projects: api, tool)" in read.json()["error"]
    assert "no project is named 'nope'" in edit.json()["error"]
    assert "typo" not in where_each_is(settings)


async def test_a_token_limited_to_a_project_works_in_it_and_is_refused_the_others_with_403(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings, WITH_DOCS_BOT, DOCS_BOT) as bot:
        session = await ok(bot.get("/api/session"))
        overview = await ok(bot.get("/api/overview"))
        refused = [
            await bot.get("/api/overview", params={"project": "tool"}),
            await bot.get("/api/search", params={"q": "explains", "project": "*"}),
            await bot.get("/api/entity", params={"name": "README"}, headers={"x-graphmem-project": "tool"}),
        ]
        shared_read = await ok(bot.get("/api/entity", params={"name": "Alice", "project": "shared"}))
        shared_write = await bot.post(
            "/api/facts/add", params={"project": "shared"}, json={"name": "Alice", "texts": ["writes docs"]}
        )
        own_write = await ok(bot.post("/api/facts/add", json={"name": "README", "texts": ["has a logo"]}))
    assert (session["project"], session["allProjects"]) == ("api", False)
    assert [item["name"] for item in session["projects"]] == ["shared", "api"]
    assert ("README", "tool") not in cards(overview, "hubs")
    for response in refused:
        assert response.status_code == 403, response.text
        assert response.json()["error"].startswith(
            "This token may reach 'github.com/acme/api' (and the shared space), not "
        )
    assert shared_read["facts"][0]["text"] == "reviews code"
    assert shared_write.status_code == 403 and "not 'shared'" in shared_write.json()["error"]
    assert [fact["text"] for fact in own_write["entity"]["facts"]] == ["explains the api", "has a logo"]


async def test_an_edit_applies_in_the_project_the_page_looks_at(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        # Seen across every project, "README" is two entities: the edit must say which.
        ambiguous = await alice.post("/api/facts/add", json={"name": "README", "texts": ["ships weekly"]})
        added = await ok(
            alice.post("/api/facts/add", params={"project": "tool"}, json={"name": "README", "texts": ["ships weekly"]})
        )
        created = await ok(
            alice.post("/api/entities/add", params={"project": "tool"}, json={"name": "cli", "type": "file"})
        )
        api_readme = await ok(alice.get("/api/entity", params={"name": "README", "project": "api"}))
    assert ambiguous.status_code == 400 and "more than one project" in ambiguous.json()["error"]
    assert [fact["text"] for fact in added["entity"]["facts"]] == ["explains the tool", "ships weekly"]
    assert added["entity"]["project"] == "tool"
    assert created["entity"]["project"] == "tool" and where_each_is(settings)["cli"] == ["tool"]
    assert [fact["text"] for fact in api_readme["facts"]] == ["explains the api"]


async def test_moving_an_entity_shows_it_in_its_new_project(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        moved = await ok(
            alice.post("/api/entities/move", params={"project": "api"}, json={"name": "notes", "to": "tool"})
        )
        api = await ok(alice.get("/api/overview", params={"project": "api"}))
        tool = await ok(alice.get("/api/overview", params={"project": "tool"}))
        session = await ok(alice.get("/api/session"))
        shared = await ok(
            alice.post("/api/entities/move", params={"project": "tool"}, json={"name": "notes", "to": "shared"})
        )
    assert moved["message"] == "Moved to tool."
    assert (moved["entity"]["name"], moved["entity"]["project"], moved["entity"]["projectKey"]) == (
        "notes",
        "tool",
        "tool",
    )
    assert moved["entity"]["facts"][0]["text"] == "meeting notes"
    assert "notes" not in [name for name, _ in cards(api, "hubs")]
    assert ("notes", "tool") in cards(tool, "hubs")
    assert [(item["name"], item["entities"]) for item in session["projects"]] == [
        ("shared", 1),
        ("api", 2),
        ("tool", 2),
    ]
    assert (shared["entity"]["project"], shared["entity"]["projectKey"]) == ("shared", "")
    assert where_each_is(settings)["notes"] == [""]


async def test_a_move_that_cannot_be_done_is_refused_and_moves_nothing(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        clash = await alice.post("/api/entities/move", params={"project": "api"}, json={"name": "README", "to": "tool"})
        there = await alice.post("/api/entities/move", params={"project": "api"}, json={"name": "notes", "to": "api"})
        missing = await alice.post(
            "/api/entities/move", params={"project": "tool"}, json={"name": "notes", "to": "api"}
        )
        everywhere = await alice.post("/api/entities/move", json={"name": "notes", "to": "*"})
    async with explorer_client(settings, token=READER) as ci:
        read_only = await ci.post("/api/entities/move", params={"project": "api"}, json={"name": "notes", "to": "tool"})
    async with explorer_client(settings, WITH_DOCS_BOT, DOCS_BOT) as bot:
        out_of_reach = await bot.post("/api/entities/move", json={"name": "notes", "to": "tool"})
        to_shared = await bot.post("/api/entities/move", json={"name": "notes", "to": "shared"})
    assert clash.status_code == 400 and "'tool' would see 'README' (tool) twice" in clash.json()["error"]
    assert there.status_code == 409 and "in api already" in there.json()["error"]
    assert missing.status_code == 404 and "No entity is named notes here" in missing.json()["error"]
    assert everywhere.status_code == 400 and "'*' is not a project" in everywhere.json()["error"]
    assert read_only.status_code == 403 and "may only read" in read_only.json()["error"]
    assert out_of_reach.status_code == 403 and "not 'tool'" in out_of_reach.json()["error"]
    assert to_shared.status_code == 403 and "not 'shared'" in to_shared.json()["error"]
    assert where_each_is(settings) == {
        "Alice": [""],
        "README": ["github.com/acme/api", "tool"],
        "server": ["github.com/acme/api"],
        "notes": ["github.com/acme/api"],
    }


async def test_a_project_name_is_found_again_after_the_memory_changes(settings: Settings):
    two_projects(settings)
    async with explorer_client(settings) as alice:
        before = await ok(alice.get("/api/search", params={"q": "explains", "project": "api"}))
        # A second project whose short name is also "api": the name no longer says which.
        await ok(
            alice.post(
                "/api/entities/add",
                headers={"x-graphmem-project": "gitlab.com/other/api"},
                json={"name": "README", "type": "file", "texts": ["explains the other api"]},
            )
        )
        after = await alice.get("/api/search", params={"q": "explains", "project": "api"})
        by_key = await ok(alice.get("/api/search", params={"q": "explains", "project": "gitlab.com/other/api"}))
    assert [hit["match"] for hit in before["results"]] == ["explains the api"]
    assert after.status_code == 400 and "'api' is the name of 2 projects" in after.json()["error"]
    assert [hit["match"] for hit in by_key["results"]] == ["explains the other api"]
