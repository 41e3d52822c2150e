"""The explorer's duplicates view, in Debian's chromium against a real `graphmem serve --http`:
entities an agent wrote under two names are listed with why, and one click (and a yes) merges
them."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.helpers_browser import WRITER, mcp_session, open_explorer, open_page, settled, team_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]


async def test_a_probable_duplicate_is_listed_and_merged_in_one_step(browser: Browser, tmp_path: Path):
    async with team_server(tmp_path) as server, open_page(browser) as page, mcp_session(server, WRITER) as agent:
        people = [
            {"name": name, "entityType": "person", "observations": [fact]}
            for name, fact in (
                ("Robert Smith", "Runs the billing team"),
                ("Bob Smith", "Approves refunds"),
            )
        ]
        await agent.call_tool("create_entities", {"entities": people})
        await open_explorer(page, server, WRITER)
        await page.get_by_role("button", name="Duplicates").click()
        await settled(page)
        panel = page.get_by_role("complementary", name="Duplicates")
        pairs = panel.get_by_role("list", name="Probable duplicates").get_by_role("listitem")
        await expect(pairs).to_have_count(1)
        await expect(pairs.first).to_contain_text("Bob Smith may be Robert Smith")
        await expect(pairs.first).to_contain_text("person · a nickname")
        page.once("dialog", lambda dialog: dialog.accept())
        await pairs.first.get_by_role("button", name="Merge Bob Smith into Robert Smith").click()
        await settled(page)
        merged = page.get_by_role("complementary", name="Robert Smith")
        await expect(merged).to_contain_text("Approves refunds")
        await expect(merged).to_contain_text("Bob Smith")  # now an alias
