"""An entity's timeline in the explorer, in Debian's chromium against a real `graphmem serve
--http`: the changes that named it, newest first, whoever made them and through what (an agent's
tool call, the page itself, the import that made the memory)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.helpers_browser import (
    WRITER,
    mcp_session,
    open_entity_by_search,
    open_explorer,
    open_page,
    settled,
    team_server,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]


async def test_the_timeline_shows_who_changed_an_entity_through_what_newest_first(browser: Browser, tmp_path: Path):
    async with team_server(tmp_path) as server, open_page(browser) as page, mcp_session(server, WRITER) as agent:
        await agent.call_tool(
            "add_observations", {"observations": [{"entityName": "Initech", "contents": ["Moved to Austin"]}]}
        )
        await open_explorer(page, server, WRITER)
        await open_entity_by_search(page, "Initech", "Initech")
        panel = page.get_by_role("complementary", name="Initech")
        await panel.get_by_text("Rename or merge").click()
        await panel.get_by_label("New name").fill("Initech Ltd")
        await panel.get_by_role("button", name="Rename").click()
        await settled(page)
        renamed = page.get_by_role("complementary", name="Initech Ltd")
        await renamed.get_by_text("Timeline", exact=True).click()
        changes = renamed.get_by_role("list", name="Changes").get_by_role("listitem")
        await expect(changes).to_have_count(3)
        await expect(changes.nth(0)).to_contain_text("by ada · via explorer")
        await expect(changes.nth(0)).to_contain_text("renamed Initech to Initech Ltd")
        await expect(changes.nth(1)).to_contain_text("by ada · via add_observations")
        await expect(changes.nth(1)).to_contain_text("added 1 fact to Initech")
        await expect(changes.nth(2)).to_contain_text("by local · via import")


async def test_undo_on_the_timeline_takes_the_change_back(browser: Browser, tmp_path: Path):
    async with team_server(tmp_path) as server:
        async with open_page(browser) as page, mcp_session(server, WRITER) as agent:
            await agent.call_tool(
                "add_observations", {"observations": [{"entityName": "Globex", "contents": ["Moved to the moon"]}]}
            )
            await open_explorer(page, server, WRITER)
            await open_entity_by_search(page, "Globex", "Globex")
            panel = page.get_by_role("complementary", name="Globex")
            await expect(panel).to_contain_text("Moved to the moon")
            await panel.get_by_text("Timeline", exact=True).click()
            page.once("dialog", lambda dialog: dialog.accept())
            await panel.get_by_role("list", name="Changes").get_by_role("button").first.click()
            await settled(page)
            await expect(page.get_by_role("status")).to_contain_text("Undone, as a new change")
            opened = await agent.call_tool("open_nodes", {"names": ["Globex"]})
        facts = opened.structured_content["entities"][0]["observations"]  # type: ignore[index]
        assert "Moved to the moon" not in facts


async def test_the_last_import_is_undone_from_the_header(browser: Browser, tmp_path: Path):
    async with team_server(tmp_path) as server:
        async with open_page(browser) as page, mcp_session(server, WRITER) as agent:
            before = await agent.call_tool("read_graph", {"mode": "names"})
            await open_explorer(page, server, WRITER)
            page.once("dialog", lambda dialog: dialog.accept())
            await page.get_by_role("button", name="Undo last import").click()
            await settled(page)
            await expect(page.get_by_role("status")).to_contain_text("Undone, as a new change")
            after = await agent.call_tool("read_graph", {"mode": "names"})
        assert before.structured_content["totalEntities"] > 0  # type: ignore[index]
        assert after.structured_content["totalEntities"] == 0  # type: ignore[index]
