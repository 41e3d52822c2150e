"""Projects in the explorer, in Debian's chromium against a real `graphmem serve --http`: the
selector in the header switches what the page shows, the panel says where an entity lives, and
moving an entity to another project takes the page there with it.

The memory: Ada is shared; project api holds its README, the api server and the release notes;
project tool holds its own README and the cli. Each README explains its own project.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from graphmem.config import Settings
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from tests.helpers_browser import mcp_session, open_entity_by_search, open_explorer, open_page, settled
from tests.helpers_network import NetworkServer, network_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]


API, TOOL = Scope("api"), Scope("tool")


def two_projects_memory(memory: Path) -> Path:
    """The memory, written by the domain itself: `graphmem import` of one file would take the
    second README for a duplicate of the first (it merges a name the file holds twice)."""
    store = open_store(Settings(memory_path=memory, semantic=False))
    try:
        graph = KnowledgeGraph(store)
        graph.create_entities([Entity("Ada Lovelace", "person", ("reviews every change",))])
        with graph.working_in(API):
            graph.create_entities(
                [
                    Entity("README", "file", ("explains the api",)),
                    Entity("api server", "service", ("answers requests",)),
                    Entity("release notes", "document", ("what changed in 2.0",)),
                ]
            )
            graph.create_relations(
                [Relation("Ada Lovelace", "README", "wrote"), Relation("README", "api server", "describes")]
            )
        with graph.working_in(TOOL):
            graph.create_entities(
                [Entity("README", "file", ("explains the tool",)), Entity("cli", "program", ("runs the tool",))]
            )
            graph.create_relations(
                [Relation("Ada Lovelace", "README", "wrote"), Relation("README", "cli", "describes")]
            )
    finally:
        store.close()
    return memory


@asynccontextmanager
async def _server(folder: Path) -> AsyncIterator[NetworkServer]:
    """`graphmem serve --http` (no token: the page may write) on a new memory of the two projects."""
    memory = two_projects_memory(folder / "projects.db")
    async with network_server(memory, "--http", "--no-semantic") as server:
        yield server


@pytest.fixture(scope="module")
async def two_projects(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[NetworkServer]:
    """A server of this module's read-only tests (the move test has its own)."""
    async with _server(tmp_path_factory.mktemp("projects")) as server:
        yield server


async def drawn(page: Page) -> list[str]:
    """The names of the entities drawn on the graph."""
    names: list[str] = await page.evaluate(
        "() => window.graphmemExplorer.cy.nodes('.entity').map(node => node.data('name')).sort()"
    )
    return names


def selector(page: Page) -> Any:
    return page.get_by_role("combobox", name="Project", exact=True)


async def search_options(page: Page, query: str) -> list[str]:
    """The texts of the search results for `query`, as the list shows them."""
    await page.get_by_role("combobox", name="Search the memory").fill(query)
    await page.get_by_role("listbox", name="Search results").get_by_role("option").first.wait_for()
    await settled(page)
    return await page.get_by_role("listbox", name="Search results").get_by_role("option").all_inner_texts()


async def test_the_project_selector_switches_what_the_overview_and_search_show(
    browser: Browser, two_projects: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, two_projects)
        await expect(selector(page)).to_have_value("*")
        offered = await selector(page).get_by_role("option").all_inner_texts()
        everything = await drawn(page)
        everywhere = await search_options(page, "explains")

        await selector(page).select_option(label="tool (2 entities)")
        await settled(page)
        await expect(page.locator("#memory-counts")).to_contain_text("3 entities")
        in_tool = await drawn(page)
        found_in_tool = await search_options(page, "explains")
        link = await page.evaluate("() => window.graphmemExplorer.shareLink()")

    assert offered == ["All projects", "shared space (1 entity)", "api (3 entities)", "tool (2 entities)"]
    assert {"api server", "cli", "release notes"} <= set(everything)
    assert sorted(everywhere) == ["README\nfile · api\nexplains the api", "README\nfile · tool\nexplains the tool"]
    assert in_tool == ["Ada Lovelace", "README", "cli"]
    assert found_in_tool == ["README\nfile · tool\nexplains the tool"]
    assert "project=tool" in link
    # The link opens the same project.
    async with open_page(browser) as page:
        await page.goto(link)
        await settled(page)
        await expect(selector(page)).to_have_value("tool")
        assert await drawn(page) == ["Ada Lovelace", "README", "cli"]


async def test_a_link_to_a_project_the_memory_does_not_hold_opens_every_project_and_says_why(
    browser: Browser, two_projects: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, two_projects, fragment="project=gone")
        await expect(page.get_by_role("status")).to_contain_text("no project is named 'gone'")
        await expect(page.get_by_role("status")).to_contain_text("Showing every project instead.")
        await expect(selector(page)).to_have_value("*")
        assert "cli" in await drawn(page)


async def test_the_panel_says_where_an_entity_lives_and_a_move_takes_the_page_there(browser: Browser, tmp_path: Path):
    async with _server(tmp_path) as server:
        async with open_page(browser) as page, mcp_session(server) as agent:
            await open_explorer(page, server, fragment="project=api")
            await expect(selector(page)).to_have_value("api")
            await open_entity_by_search(page, "Ada", "Ada Lovelace")
            ada = page.get_by_role("complementary", name="Ada Lovelace")
            await expect(ada).to_contain_text("Project: shared space (every project sees it)")

            await open_entity_by_search(page, "release", "release notes")
            notes = page.get_by_role("complementary", name="release notes")
            await expect(notes).to_contain_text("Project: api")
            await notes.get_by_text("Move to another project").click()
            await notes.get_by_label("Move to project").select_option(label="tool")
            await notes.get_by_role("button", name="Move", exact=True).click()
            await settled(page)

            await expect(selector(page)).to_have_value("tool")
            await expect(page.get_by_role("heading", level=2, name="release notes", exact=True)).to_be_visible()
            await expect(notes).to_contain_text("Project: tool")
            await expect(page.get_by_role("status")).to_contain_text("Moved to tool. Now showing project tool")
            assert "release notes" in await drawn(page)
            in_tool = await agent.call_tool("open_nodes", {"names": ["release notes"], "project": "tool"})
            in_api = await agent.call_tool("open_nodes", {"names": ["release notes"], "project": "api"})
        assert [entity["name"] for entity in in_tool.structured_content["entities"]] == ["release notes"]  # type: ignore[index]
        assert in_api.structured_content["entities"] == []  # type: ignore[index]
