"""The explorer on memories too big to draw whole: many entity types, and hubs with many neighbours.

Each memory is small enough to build in a second but has the shape that made the page hard to
read on real ones: 31 entity types (the legend and the clusters), and hubs of 150 neighbours
(the cap of drawn entities).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.helpers_browser import (
    DESKTOP,
    PHONE,
    click_node,
    imported_memory,
    open_entity_by_search,
    open_explorer,
    open_page,
    settled,
)
from tests.helpers_network import NetworkServer, network_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.browser]

TOKEN = "large-token-0123456789abcdef"
TYPES = [
    "person", "song", "project", "place", "organization", "event", "document", "meeting",
    "product", "team", "device", "city", "country", "book", "tool", "language", "task",
    "concept", "goal", "decision", "issue", "paper", "server", "dataset", "model", "course",
    "recipe", "animal", "building", "vehicle", "plant",
]  # fmt: skip
"""31 types, as in the 40,000-entity memory the explorer was tried on; the commonest first."""
HUBS = ["Hub Anna", "Hub Boris", "Hub Chloe"]
NEIGHBOURS = 150
MAX_DRAWN = 400


def many_types_lines() -> list[dict[str, Any]]:
    """31 types, the i-th with 40 - i entities; each type's first entity relates to four others."""
    lines: list[dict[str, Any]] = []
    for rank, entity_type in enumerate(TYPES):
        names = [f"{entity_type.title()} number {index} of the {entity_type} collection" for index in range(40 - rank)]
        lines += [{"type": "entity", "name": n, "entityType": entity_type, "observations": []} for n in names]
        lines += [{"type": "relation", "from": names[0], "to": n, "relationType": "knows"} for n in names[1:5]]
    return lines


def hubs_lines() -> list[dict[str, Any]]:
    """Three hubs, each with 150 neighbours of its own."""
    lines: list[dict[str, Any]] = []
    for hub in HUBS:
        lines.append({"type": "entity", "name": hub, "entityType": "person", "observations": ["A hub"]})
        for index in range(NEIGHBOURS):
            name = f"{hub} contact {index:03d}"
            lines.append({"type": "entity", "name": name, "entityType": "person", "observations": []})
            lines.append({"type": "relation", "from": hub, "to": name, "relationType": "knows"})
    return lines


@pytest.fixture(scope="module")
async def many_types(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[NetworkServer]:
    folder = tmp_path_factory.mktemp("many-types")
    memory = await imported_memory(folder, "many-types", many_types_lines())
    async with network_server(memory, "--http", "--no-semantic", env={"GRAPHMEM_TOKEN": TOKEN}) as server:
        yield server


@pytest.fixture(scope="module")
async def hubs(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[NetworkServer]:
    folder = tmp_path_factory.mktemp("hubs")
    memory = await imported_memory(folder, "hubs", hubs_lines())
    async with network_server(memory, "--http", "--no-semantic", env={"GRAPHMEM_TOKEN": TOKEN}) as server:
        yield server


DRAWING = """() => {
  const cy = window.graphmemExplorer.cy;
  const area = document.getElementById('graph').getBoundingClientRect();
  const legend = document.querySelector('.legend').getBoundingClientRect();
  const under = {x1: legend.left - area.left, y1: legend.top - area.top,
                 x2: legend.right - area.left, y2: legend.bottom - area.top};
  const measure = document.createElement('canvas').getContext('2d');
  const clusters = cy.nodes('.type-cluster:visible').map(n => {
    measure.font = `bold ${n.style('font-size')} ${n.style('font-family')}`;
    const label = n.boundingBox({includeNodes: false, includeLabels: true, includeOverlays: false});
    return {label: n.data('label'), drawn: label.w, needed: measure.measureText(n.data('label')).width};
  });
  const hidden = cy.nodes(':visible').filter(n => {
    const b = n.renderedBoundingBox({includeLabels: false});
    return b.x1 < under.x2 && under.x1 < b.x2 && b.y1 < under.y2 && under.y1 < b.y2;
  }).map(n => n.data('label'));
  return {zoom: cy.zoom(), clusters, hidden};
}"""


async def drawing(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = await page.evaluate(DRAWING)
    return result


async def test_an_overview_of_31_types_is_readable_at_its_first_fit_and_clear_of_the_legend(
    browser: Browser, many_types: NetworkServer
):
    async with open_page(browser, DESKTOP) as page:
        await open_explorer(page, many_types, TOKEN)
        drawn = await drawing(page)
        # 13px entity labels (13px bold clusters) at 10px or more on screen.
        assert drawn["zoom"] * 13 >= 10, drawn["zoom"]
        assert 0 < len(drawn["clusters"]) <= 12
        for cluster in drawn["clusters"]:
            assert cluster["drawn"] >= cluster["needed"] - 1, cluster
        assert drawn["hidden"] == []
        legend = page.get_by_role("complementary", name="Legend and filters")
        toggle = legend.get_by_role("button", name="Entity types (31)")
        await expect(toggle).to_have_attribute("aria-expanded", "true")
        # A type the overview does not draw is in the legend, and a click draws it.
        await legend.get_by_role("button", name=re.compile("^server")).click()
        await settled(page)
        assert await page.evaluate("() => window.graphmemExplorer.cy.nodes('.entity[type = \"server\"]').length") > 0


async def test_at_a_phone_width_the_legend_starts_closed_and_the_overview_is_readable(
    browser: Browser, many_types: NetworkServer
):
    async with open_page(browser, PHONE) as page:
        await open_explorer(page, many_types, TOKEN)
        legend = page.get_by_role("complementary", name="Legend and filters")
        toggle = legend.get_by_role("button", name="Entity types (31)")
        await expect(toggle).to_have_attribute("aria-expanded", "false")
        await expect(legend.get_by_role("button", name=re.compile("^person"))).to_be_hidden()
        box = await legend.bounding_box()
        assert box is not None and box["height"] < 60 and box["width"] < PHONE["width"] / 2
        assert (await drawing(page))["zoom"] * 12 >= 9
        await toggle.click()
        await expect(toggle).to_have_attribute("aria-expanded", "true")
        await expect(legend.get_by_role("button", name=re.compile("^person"))).to_be_visible()


async def test_the_status_strip_takes_no_room_until_there_is_something_to_say(
    browser: Browser, many_types: NetworkServer
):
    async with open_page(browser, DESKTOP) as page:
        await open_explorer(page, many_types, TOKEN)
        status = page.get_by_role("status")
        await expect(status).to_have_text("")
        assert (await status.bounding_box() or {"height": 0})["height"] == 0
        await page.get_by_role("button", name="Share link").click()
        await expect(status).to_contain_text("Link to this view")
        assert (await status.bounding_box() or {"height": 0})["height"] > 10


async def drawn_entities(page: Page) -> int:
    count: int = await page.evaluate("() => window.graphmemExplorer.cy.nodes('.entity').length")
    return count


async def test_expanding_hubs_page_after_page_never_draws_more_than_400_and_says_what_was_put_away(
    browser: Browser, hubs: NetworkServer
):
    async with open_page(browser, DESKTOP) as page:
        await open_explorer(page, hubs, TOKEN)
        most = 0
        said: list[str] = []
        for hub in HUBS:
            await open_entity_by_search(page, hub, hub)
            await page.get_by_role("button", name="Expand neighbours").click()
            await settled(page)
            more = f'.more[key = "n:{hub}"]'
            while await page.evaluate(f"() => window.graphmemExplorer.cy.nodes('{more}').length"):
                await click_node(page, more)
                await settled(page)
                most = max(most, await drawn_entities(page))
                assert most <= MAX_DRAWN
                said.append(await page.get_by_role("status").inner_text())
        assert most == MAX_DRAWN or most > 2 * NEIGHBOURS
        # Said as it happens, beside what the step drew.
        put_away = f"To keep at most {MAX_DRAWN} entities drawn, the oldest expansions were removed: {HUBS[0]}."
        assert [text for text in said if put_away in text] == [
            f"{HUBS[2]}: 150 neighbours, 50 more not drawn. {put_away}"
        ]
        # The last hub is drawn whole, the first one's neighbours are put away.
        assert (
            await page.evaluate(
                f"() => window.graphmemExplorer.cy.getElementById('e:{HUBS[-1]}').neighborhood('node.entity').length"
            )
            == NEIGHBOURS
        )
        assert not await page.evaluate(
            f"() => window.graphmemExplorer.cy.getElementById('e:{HUBS[0]} contact 000').nonempty()"
        )
