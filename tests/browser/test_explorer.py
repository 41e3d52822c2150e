"""The explorer page in Debian's chromium, against a real `graphmem serve --http` on a team's memory.

What a user sees is checked through the DOM (roles, names, text); the drawing is read from
`window.graphmemExplorer.cy` only where the canvas is the thing under test (label overlaps).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning
from playwright.async_api import Browser, expect

from tests.helpers_browser import (
    CHAT,
    DESKTOP,
    LABEL_OVERLAPS,
    PHONE,
    READER,
    WRITER,
    click_node,
    mcp_session,
    open_entity_by_search,
    open_explorer,
    open_page,
    settled,
    team_server,
)
from tests.helpers_network import NetworkServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="module")
async def team(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[NetworkServer]:
    """One server on the team's memory for this module: `ada` may write, `rita` may only read."""
    async with team_server(tmp_path_factory.mktemp("team")) as server:
        yield server


TYPE_COLOURS = """() => {
  const colours = {};
  window.graphmemExplorer.cy.nodes('.entity:visible, .type-cluster:visible').forEach(n => {
    (colours[n.data('type')] ||= new Set()).add(n.style('background-color'));
  });
  return Object.fromEntries(Object.entries(colours).map(([t, s]) => [t, [...s]]));
}"""


def screenshot_path(tmp_path: Path, name: str) -> Path:
    """docs/images/NAME when GRAPHMEM_UPDATE_SCREENSHOTS=1 (the README shows it), else tmp_path."""
    if os.environ.get("GRAPHMEM_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        return DOCS_IMAGES / name
    return tmp_path / name


async def test_the_overview_draws_readable_labels_apart_with_one_colour_and_legend_entry_per_type(
    browser: Browser, team: NetworkServer, tmp_path: Path
):
    async with open_page(browser, DESKTOP) as page:
        await open_explorer(page, team, WRITER)
        await expect(page.locator("#memory-counts")).to_contain_text("42 entities")
        assert await page.evaluate(LABEL_OVERLAPS) == []
        colours: dict[str, list[str]] = await page.evaluate(TYPE_COLOURS)
        assert set(colours) == {"person", "project", "organisation", "place", "tool"}
        assert all(len(shades) == 1 for shades in colours.values()), colours
        assert len({shades[0] for shades in colours.values()}) == len(colours)
        legend = page.get_by_role("complementary", name="Legend and filters")
        for entity_type in colours:
            await expect(legend.get_by_role("button", name=re.compile(entity_type))).to_be_visible()
        # 12px labels drawn at no less than 10px on screen.
        assert await page.evaluate("() => window.graphmemExplorer.cy.zoom()") * 12 >= 10
        await page.screenshot(path=screenshot_path(tmp_path, "explorer.png"))

    async with open_page(browser, PHONE) as page:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Ada", "Ada Lovelace")
        await page.screenshot(path=screenshot_path(tmp_path, "explorer-phone.png"))


async def test_searching_and_clicking_a_result_shows_the_entitys_type_and_current_facts(
    browser: Browser, team: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await page.get_by_role("combobox", name="Search the memory").fill("compiler")
        result = page.get_by_role("option", name=re.compile("Grace Hopper"))
        await expect(result).to_contain_text("owns the compiler work")
        await result.click()
        panel = page.get_by_role("complementary", name="Grace Hopper")
        await expect(panel).to_contain_text("person")
        facts = panel.get_by_role("list", name="Current facts")
        await expect(facts).to_contain_text("Staff engineer; owns the compiler work")
        await expect(facts).to_contain_text("Joined in 2016")
        assert "focus=Grace+Hopper" in page.url


async def test_expanding_an_entity_draws_a_page_of_its_neighbours_and_says_how_many_more(
    browser: Browser, team: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, CHAT, CHAT)
        await page.get_by_role("button", name="Expand neighbours").click()
        await settled(page)
        await expect(page.get_by_role("status")).to_have_text(f"{CHAT}: 30 neighbours, 5 more not drawn.")
        drawn = await page.evaluate("() => window.graphmemExplorer.cy.nodes('.more').map(n => n.data('label'))")
        assert drawn == ["5 more"]
        await click_node(page, ".more")
        await settled(page)
        neighbours = await page.evaluate(
            f"() => window.graphmemExplorer.cy.getElementById('e:{CHAT}').neighborhood('node.entity').length"
        )
        assert neighbours == 30
        assert await page.evaluate("() => window.graphmemExplorer.cy.nodes('.more').length") == 0


async def test_the_path_between_two_entities_is_listed_hop_by_hop(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Annie", "Annie Easley")
        await page.get_by_role("button", name="Path from here").click()
        await open_entity_by_search(page, "Knuth", "Donald Knuth")
        await page.get_by_role("button", name="Path to here").click()
        await settled(page)
        steps = page.get_by_role("list", name="Path").get_by_role("listitem")
        await expect(page.get_by_role("heading", name="Path from Annie Easley to Donald Knuth")).to_be_visible()
        await expect(steps.first).to_contain_text("Annie Easley")
        await expect(steps.last).to_contain_text("Donald Knuth")
        assert "from=Annie+Easley" in page.url and "to=Donald+Knuth" in page.url


async def test_editing_a_fact_makes_a_new_version_that_mcp_clients_read_and_subscribers_hear(
    browser: Browser, team: NetworkServer
):
    uri = "memory://entity/Margaret%20Hamilton"
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == uri:
            heard.set()

    async with mcp_session(team, WRITER, on_message) as session, open_page(browser) as page:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await session.subscribe_resource(uri)
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Margaret", "Margaret Hamilton")
        await page.get_by_role("button", name="Edit the fact: Runs the release process").click()
        await page.get_by_label("New text for this fact").fill("Runs the release process and the changelog")
        await page.get_by_role("button", name="Save").click()
        await settled(page)
        panel = page.get_by_role("complementary", name="Margaret Hamilton")
        await expect(panel.get_by_role("list", name="Current facts")).to_contain_text("and the changelog")
        await panel.get_by_text("History (1 earlier version)").click()
        await expect(panel.get_by_role("list", name="Earlier versions")).to_contain_text("Runs the release process")
        await expect(panel.get_by_role("list", name="Current facts")).to_contain_text("by ada")
        with anyio.fail_after(10):
            await heard.wait()
        read = await session.call_tool("open_nodes", {"names": ["Margaret Hamilton"]})
        text = read.content[0].text  # type: ignore[union-attr]
        assert "Runs the release process and the changelog" in text


async def test_relations_added_and_deleted_in_the_page_show_in_its_panel(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Hedy", "Hedy Lamarr")
        panel = page.get_by_role("complementary", name="Hedy Lamarr")
        await panel.get_by_label("Relation type", exact=True).fill("pairsWith")
        await panel.get_by_label("To (entity name)", exact=True).fill("Sophie Wilson")
        await panel.get_by_role("button", name="Add relation").click()
        await settled(page)
        relations = panel.get_by_role("list", name="Relations")
        await expect(relations).to_contain_text("pairsWith → Sophie Wilson")
        page.once("dialog", lambda dialog: dialog.accept())  # the page asks before it deletes
        await panel.get_by_role("button", name="Delete the relation Hedy Lamarr pairsWith Sophie Wilson").click()
        await settled(page)
        await expect(relations).not_to_contain_text("pairsWith")


async def test_a_read_only_token_is_offered_no_edit_controls_and_a_refused_write_says_why(
    browser: Browser, team: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, team, READER)
        await open_entity_by_search(page, "Turing", "Alan Turing")
        panel = page.get_by_role("complementary", name="Alan Turing")
        await expect(panel.get_by_role("list", name="Current facts")).to_contain_text("ranking model")
        for control in ("Edit", "Delete", "Add fact", "Add relation", "Rename", "Merge"):
            await expect(panel.get_by_role("button", name=re.compile(f"^{control}"))).to_have_count(0)
        await expect(page.get_by_role("button", name="New entity")).to_be_hidden()
        # Sent anyway (an old tab, a stale session answer): the server's 403, said plainly.
        await page.evaluate(
            "() => window.graphmemExplorer.actions.edit('facts/add', {name: 'Alan Turing', texts: ['x']})"
        )
        await expect(page.get_by_role("status")).to_contain_text("may only read")


async def test_the_token_leaves_the_address_at_once_and_is_kept_for_the_session(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER, "focus=Ada+Lovelace")
        assert "token" not in page.url and WRITER not in page.url
        await expect(page.get_by_role("heading", name="Ada Lovelace", exact=True)).to_be_visible()
        await page.reload()
        await settled(page)
        await expect(page.locator("#memory-counts")).to_contain_text("42 entities")

    async with open_page(browser) as page:
        await page.goto(team.base + "/")
        form = page.get_by_role("region", name="This memory needs a token")
        await form.get_by_label("Token", exact=True).fill("not-the-token")
        await form.get_by_role("button", name="Open the memory").click()
        await expect(form.get_by_role("alert")).to_have_text("That token was refused. Check it and try again.")
        await form.get_by_label("Token", exact=True).fill(WRITER)
        await form.get_by_role("button", name="Open the memory").click()
        await settled(page)
        await expect(page.locator("#memory-counts")).to_contain_text("42 entities")
        assert WRITER not in page.url


async def test_the_page_says_whose_token_it_holds_and_a_link_with_another_token_is_offered_not_adopted(
    browser: Browser, team: NetworkServer
):
    # Issue 27, item 17: opening someone's link signed the visitor in as them, silently.
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await page.goto("about:blank")
        await page.goto(team.base + f"/#token={READER}&focus=Ada+Lovelace")
        await settled(page)
        assert READER not in page.url
        await expect(page.get_by_role("heading", name="Ada Lovelace", exact=True)).to_be_visible()
        # Still ada's tab: she may write, rita may not.
        await expect(page.get_by_role("button", name="New entity")).to_be_visible()
        await expect(page.locator("#signed-in")).to_have_text("Signed in as ada")
        offer = page.get_by_role("region", name="The link's token")
        await expect(offer).to_contain_text("carried the token of rita (read only)")
        await expect(offer).to_contain_text("You are still signed in as ada")
        await offer.get_by_role("button", name="Use the link's token").click()
        await expect(page.locator("#signed-in")).to_have_text("Signed in as rita (read only)")
        await settled(page)
        await expect(offer).to_be_hidden()
        await expect(page.get_by_role("button", name="New entity")).to_be_hidden()


async def test_a_new_tab_signed_in_by_a_link_says_at_once_whose_name_its_edits_carry(
    browser: Browser, team: NetworkServer
):
    # A new tab holds no token, so it takes the link's: anyone can make such a link, so the page
    # says so where it cannot be missed, not only in the top bar.
    async with open_page(browser) as page:
        await page.goto(team.base + f"/#token={READER}&focus=Ada+Lovelace")
        await settled(page)
        await expect(page.locator("#signed-in")).to_have_text("Signed in as rita (read only)")
        await expect(page.get_by_role("status")).to_contain_text("Signed in by the link you opened, as rita")
        await page.reload()  # the tab's own token now: nothing more to say
        await settled(page)
        await expect(page.get_by_role("status")).not_to_contain_text("Signed in by the link")


async def test_a_link_with_another_token_pasted_into_the_same_tab_is_offered_and_leaves_the_address(
    browser: Browser, team: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await page.evaluate(f"() => {{ location.hash = 'token={READER}'; }}")
        offer = page.get_by_role("region", name="The link's token")
        await expect(offer).to_contain_text("carried the token of rita (read only)")
        assert READER not in page.url
        await offer.get_by_role("button", name="Keep mine").click()
        await expect(offer).to_be_hidden()
        await expect(page.locator("#signed-in")).to_have_text("Signed in as ada")


async def test_a_link_s_token_replaces_one_the_server_refuses_and_the_page_says_so(
    browser: Browser, team: NetworkServer
):
    async with open_page(browser) as page:
        await open_explorer(page, team, READER)
        # What a tab keeps from an earlier `graphmem view`, whose token died with it.
        await page.evaluate("() => sessionStorage.setItem('graphmem.token', 'token-of-a-server-gone-0123456789')")
        await page.goto("about:blank")
        await page.goto(team.base + f"/#token={WRITER}")
        await settled(page)
        await expect(page.locator("#signed-in")).to_have_text("Signed in as ada")
        await expect(page.get_by_role("status")).to_contain_text("The token this tab held was refused")
        await expect(page.get_by_role("region", name="The link's token")).to_be_hidden()


async def test_a_shared_link_reopens_the_same_view(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, CHAT, CHAT)
        await page.get_by_role("button", name="Expand neighbours").click()
        await settled(page)
        await page.get_by_role("button", name=re.compile("^place")).click()
        await page.get_by_role("button", name="Share link").click()
        await expect(page.get_by_role("status")).to_contain_text("Link to this view")
        link = re.search(r"http\S+", await page.get_by_role("status").inner_text())
        assert link is not None and WRITER not in link.group(0)
        drawn = sorted(
            await page.evaluate("() => window.graphmemExplorer.cy.nodes('.entity:visible').map(n => n.id())")
        )

    async with open_page(browser) as page:
        await page.goto(link.group(0))
        await page.get_by_label("Token", exact=True).fill(WRITER)
        await page.get_by_role("button", name="Open the memory").click()
        await settled(page)
        await expect(page.get_by_role("heading", name=CHAT, exact=True)).to_be_visible()
        await expect(page.get_by_role("button", name=re.compile("^place"))).to_have_attribute("aria-pressed", "false")
        again = sorted(
            await page.evaluate("() => window.graphmemExplorer.cy.nodes('.entity:visible').map(n => n.id())")
        )
        assert again == drawn


async def test_the_keyboard_alone_finds_opens_and_closes_an_entity(browser: Browser, team: NetworkServer):
    async with open_page(browser) as page:
        await open_explorer(page, team, WRITER)
        await page.keyboard.press("Tab")
        search = page.get_by_role("combobox", name="Search the memory")
        await expect(search).to_be_focused()
        await page.keyboard.type("engineer")
        await page.keyboard.press("Enter")
        options = page.get_by_role("option")
        await expect(options).to_have_count(2)  # Ada Lovelace and Grace Hopper
        await expect(page.locator("#search-summary")).to_have_text("2 results")
        await page.keyboard.press("ArrowDown")
        second = await options.nth(1).get_attribute("id")
        await expect(search).to_have_attribute("aria-activedescendant", second or "")
        name = (await options.nth(1).locator(".option-name").inner_text()).strip()
        await page.keyboard.press("Enter")
        heading = page.get_by_role("heading", name=name, exact=True)
        await expect(heading).to_be_focused()
        await page.keyboard.press("Escape")
        await expect(page.locator("#panel")).to_be_hidden()
        await expect(search).to_be_focused()


async def test_at_a_phone_width_search_and_panel_are_usable_without_scrolling_sideways(
    browser: Browser, team: NetworkServer
):
    async with open_page(browser, PHONE) as page:
        await open_explorer(page, team, WRITER)
        await open_entity_by_search(page, "Knuth", "Donald Knuth")
        panel = page.get_by_role("complementary", name="Donald Knuth")
        await expect(panel.get_by_role("list", name="Current facts")).to_contain_text("documentation site")
        sizes = await page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert sizes[0] <= sizes[1] == PHONE["width"]
        for box in (await page.get_by_role("combobox").bounding_box(), await panel.bounding_box()):
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        # The graph above the sheet still answers taps.
        graph = await page.locator("#graph").bounding_box()
        assert graph is not None and graph["height"] > 200
