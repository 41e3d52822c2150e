"""The explorer's filters (the legend by entity type, the relation types) and the corrections that
change an entity itself (rename, merge, a deleted fact), in Debian's chromium against a real server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from tests.helpers_browser import (
    LABEL_OVERLAPS,
    WRITER,
    imported_memory,
    mcp_session,
    open_entity_by_search,
    open_explorer,
    open_page,
    settled,
    team_server,
)
from tests.helpers_network import NetworkServer, network_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
async def team(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[NetworkServer]:
    """A server of its own on the team's memory (these tests change entities the others read)."""
    async with team_server(tmp_path_factory.mktemp("team")) as server:
        yield server


async def visible(page: Page, selector: str) -> int:
    """How many drawn elements `selector` (a Cytoscape selector) picks that the user can see."""
    count: int = await page.evaluate(
        "(selector) => window.graphmemExplorer.cy.elements(selector).filter(':visible').length", selector
    )
    return count


async def test_the_legend_hides_and_shows_an_entity_type(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        people = await visible(page, ".entity[type = 'person']")
        person = page.get_by_role("button", name="person", exact=False).first
        await person.click()
        await settled(page)
        hidden = await visible(page, ".entity[type = 'person']")
        pressed = await person.get_attribute("aria-pressed")
        await person.click()
        await settled(page)
        shown_again = await visible(page, ".entity[type = 'person']")
    assert people > 0
    assert hidden == 0 and pressed == "false"
    assert shown_again == people


async def test_a_relation_type_can_be_hidden_and_the_link_remembers_it(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await page.get_by_text("Relation types").click()
        uses = await visible(page, "edge[relationType = 'uses']")
        await page.get_by_role("checkbox", name="uses").uncheck()
        await settled(page)
        hidden = await visible(page, "edge[relationType = 'uses']")
        others = await visible(page, "edge[relationType = 'worksOn']")
        link = await page.evaluate("() => window.graphmemExplorer.shareLink()")
    assert uses > 0 and hidden == 0 and others > 0
    async with open_page(browser) as page:
        await page.goto(link.replace("#", f"#token={WRITER}&", 1) if "#" in link else link + f"#token={WRITER}")
        await settled(page)
        assert await visible(page, "edge[relationType = 'uses']") == 0


async def test_renaming_and_merging_in_the_page_change_the_memory_agents_read(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page, mcp_session(team, WRITER) as agent:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Initech", "Initech")
        panel = page.get_by_role("complementary", name="Initech")
        await panel.get_by_text("Rename or merge").click()
        await panel.get_by_label("New name").fill("Initech Ltd")
        await panel.get_by_role("button", name="Rename").click()
        await settled(page)
        renamed = page.get_by_role("complementary", name="Initech Ltd")
        await expect(renamed.get_by_role("heading", level=2)).to_have_text("Initech Ltd")
        await open_entity_by_search(page, "Globex", "Globex")
        globex = page.get_by_role("complementary", name="Globex")
        await globex.get_by_text("Rename or merge").click()
        await globex.get_by_label("Merge into (entity name)").fill("Initech Ltd")
        await globex.get_by_role("button", name="Merge").click()
        await settled(page)
        await expect(page.get_by_role("heading", level=2, name="Initech Ltd", exact=True)).to_be_visible()
        by_old_name = await agent.call_tool("open_nodes", {"names": ["Initech", "Globex"]})
    [merged] = by_old_name.structured_content["entities"]  # type: ignore[index]
    assert merged["name"] == "Initech Ltd"
    assert "Globex is a customer" in merged["observations"]


async def test_deleting_a_fact_asks_first_and_a_cancel_keeps_it(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page, mcp_session(team, WRITER) as agent:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Lisbon", "Lisbon")
        page.once("dialog", lambda dialog: dialog.dismiss())
        await page.get_by_role("button", name="Delete the fact: An office in Lisbon").click()
        await settled(page)
        kept = await agent.call_tool("open_nodes", {"names": ["Lisbon"]})
        page.once("dialog", lambda dialog: dialog.accept())
        await page.get_by_role("button", name="Delete the fact: An office in Lisbon").click()
        await settled(page)
        await expect(page.get_by_role("complementary", name="Lisbon")).not_to_contain_text("An office in Lisbon")
        gone = await agent.call_tool("open_nodes", {"names": ["Lisbon"]})
    assert kept.structured_content["entities"][0]["observations"] == ["An office in Lisbon"]  # type: ignore[index]
    assert gone.structured_content["entities"][0]["observations"] == []  # type: ignore[index]


async def test_an_entity_with_very_many_facts_shows_the_first_ones_and_says_how_many_there_are(
    browser: Browser, tmp_path: Path
):
    diary = {"type": "entity", "name": "Diary", "entityType": "document"}
    diary["observations"] = [f"entry {index}" for index in range(260)]
    memory = await imported_memory(tmp_path, "diary", [diary])
    async with network_server(memory, "--http", "--no-semantic") as server, open_page(browser) as page:
        await open_explorer(page, server)
        await open_entity_by_search(page, "Diary", "Diary")
        panel = page.get_by_role("complementary", name="Diary")
        await expect(panel.get_by_role("heading", name="Facts (260)")).to_be_visible()
        await expect(panel).to_contain_text("Showing the first 200 of 260 facts.")
        assert await panel.get_by_role("list", name="Current facts").get_by_role("listitem").count() == 200


async def test_an_entity_opened_from_search_is_drawn_clear_of_the_others_labels(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        # The overview draws a few people per type; the others come in when opened.
        for name in ("Dennis Ritchie", "Niklaus Wirth", "Annie Easley", "Jean Sammet"):
            await open_entity_by_search(page, name.split()[1], name)
            assert await page.evaluate(LABEL_OVERLAPS) == [], name
