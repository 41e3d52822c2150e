"""A secret written in the explorer, in Debian's chromium against a real `graphmem serve --http`:
the page says it was taken out, and the fact shows the marker where it was, marked as such."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.helpers_browser import WRITER, open_entity_by_search, open_explorer, open_page, settled, team_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]

TOKEN = "ghp_" + "Zq3vR8tW1yK6mN2pL9xB4cD7fG0hJ5sA2eU8"


async def test_a_secret_typed_into_a_fact_is_never_kept_and_the_page_says_so(browser: Browser, tmp_path: Path):
    async with team_server(tmp_path) as server, open_page(browser) as page:
        await open_explorer(page, server, WRITER)
        await open_entity_by_search(page, "Initech", "Initech")
        panel = page.get_by_role("complementary", name="Initech")
        await panel.get_by_label("Add a fact").fill(f"CI pushes with {TOKEN}")
        await panel.get_by_role("button", name="Add fact").click()
        await settled(page)
        await expect(page.get_by_role("status")).to_contain_text("Redacted a secret before saving (GitHub token")
        marker = panel.locator("mark.redacted")
        await expect(marker).to_have_text("[redacted: GitHub token]")
        await expect(panel).to_contain_text("CI pushes with [redacted: GitHub token]")
        assert TOKEN not in await page.content()
