"""The explorer in a real browser: Debian's chromium driven by Playwright, and a team's memory.

One browser is started per test session (each test opens its own context, so storage and
cookies never leak between tests). A test skips, saying why, only when no chromium is found;
`playwright install` is never needed or run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from playwright.async_api import Browser, Page, async_playwright

from tests.helpers_network import NetworkServer, network_server
from tests.helpers_stdio import server_env

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
LABEL_OVERLAPS = """() => {
  const boxes = window.graphmemExplorer.cy.nodes(':visible')
    .map(n => [n.data('label'), n.boundingBox({includeLabels: true})]);
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [a, b] = [boxes[i][1], boxes[j][1]];
    if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) overlaps.push([boxes[i][0], boxes[j][0]]);
  }
  return overlaps;
}"""
"""The pairs of drawn nodes whose label boxes overlap (a Cytoscape script for `page.evaluate`)."""

WAIT_MS = 15_000
"""The longest any page step may take (a layout of a few hundred nodes is well under a second)."""


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """Debian's chromium, headless; the test skips when there is none."""
    executable = shutil.which("chromium")
    if executable is None:
        reason = "no chromium on PATH: install it with scripts/system-packages (never `playwright install`)"
        if os.environ.get("CI"):
            # CI installs chromium through ./scripts/test: a skip there would hide that it did not.
            pytest.fail(reason)
        pytest.skip(reason)
    # Chromium's sandbox refuses to start as root (CI containers); a normal user keeps it.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=args)
        try:
            yield launched
        finally:
            await launched.close()


@asynccontextmanager
async def open_page(browser: Browser, viewport: dict[str, int] = DESKTOP) -> AsyncIterator[Page]:
    """A fresh page in a fresh context (its own sessionStorage); page errors fail the test."""
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # The page must live within its Content-Security-Policy: a refused script or style is a bug.
    page.on(
        "console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None
    )
    page.set_default_timeout(WAIT_MS)
    try:
        yield page
    finally:
        await context.close()
    assert errors == [], errors


async def settled(page: Page) -> None:
    """Wait until the explorer has loaded and has no request or layout in flight."""
    # A selector, not wait_for_function: the page's CSP forbids the eval that would need.
    await page.locator("body[data-explorer=idle]").wait_for(state="attached")


async def open_explorer(page: Page, server: NetworkServer, token: str | None = None, fragment: str = "") -> None:
    """Open the explorer, handing the token over in the fragment as `graphmem view` does."""
    parts = [f"token={token}"] if token else []
    if fragment:
        parts.append(fragment)
    await page.goto(server.base + "/" + ("#" + "&".join(parts) if parts else ""))
    await settled(page)


async def open_entity_by_search(page: Page, query: str, name: str) -> None:
    """Type in the search box and click the result named `name`; the panel opens on it."""
    await page.get_by_role("combobox", name="Search the memory").fill(query)
    await page.get_by_role("option", name=name).first.click()
    await page.get_by_role("heading", level=2, name=name, exact=True).wait_for()
    await settled(page)


async def click_node(page: Page, selector: str) -> None:
    """Click, with the mouse, the first drawn node that `selector` (a Cytoscape selector) picks."""
    where = await page.evaluate(
        """(selector) => {
          const node = window.graphmemExplorer.cy.nodes(selector).first();
          const box = document.getElementById('graph').getBoundingClientRect();
          const at = node.renderedPosition();
          return {x: box.left + at.x, y: box.top + at.y};
        }""",
        selector,
    )
    await page.mouse.click(where["x"], where["y"])


@asynccontextmanager
async def mcp_session(
    server: NetworkServer, token: str | None = None, on_message: Any = None
) -> AsyncIterator[ClientSession]:
    """An MCP SDK client over Streamable HTTP to the same server the page talks to."""
    headers = {"authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        yield session


# -- a realistic small memory: a team -------------------------------------------------------

PEOPLE = [
    ("Ada Lovelace", "Engineering lead; writes the design notes"),
    ("Grace Hopper", "Staff engineer; owns the compiler work"),
    ("Alan Turing", "Researcher on the ranking model"),
    ("Edsger Dijkstra", "Reviews every change to the path finder"),
    ("Barbara Liskov", "Architect of the storage layer"),
    ("Donald Knuth", "Writes the documentation site"),
    ("Margaret Hamilton", "Runs the release process"),
    ("Ken Thompson", "Keeps the build fast"),
    ("Dennis Ritchie", "Maintains the C extension"),
    ("Linus Torvalds", "Reviews the kernel patches"),
    ("Guido van Rossum", "Python style reviewer"),
    ("Frances Allen", "Optimises the query planner"),
    ("John McCarthy", "Prototypes in Lisp first"),
    ("Tim Berners-Lee", "Owns the HTTP transport"),
    ("Radia Perlman", "Designs the network layout"),
    ("Leslie Lamport", "Writes the TLA+ specs"),
    ("Niklaus Wirth", "Keeps modules small"),
    ("Katherine Johnson", "Checks every benchmark by hand"),
    ("Hedy Lamarr", "Works on the wireless sync"),
    ("Jean Sammet", "Designs the query language"),
    ("Sophie Wilson", "Tunes the vector search"),
    ("Adele Goldberg", "Leads the user research"),
    ("Karen Spärck Jones", "Designed the word ranking (idf)"),
    ("Anders Hejlsberg", "Types the JavaScript"),
    ("Annie Easley", "Runs the on-call rota"),
]
PROJECTS = ["Explorer", "Search by meaning", "Team server", "Release 2.0", "Docs site"]
ORGANISATIONS = ["Northwind", "Globex", "Initech"]
PLACES = ["London", "Berlin", "Lisbon", "Toronto"]
TOOLS = ["PostgreSQL", "SQLite", "Playwright", "Grafana"]
CHAT = "Slack"
"""The tool everyone uses: 30 neighbours, more than one page of 25."""


def team_memory_lines() -> list[dict[str, Any]]:
    """The team as the official JSONL lines: 42 entities, their facts, about 130 relations."""
    lines: list[dict[str, Any]] = []

    def add(name: str, entity_type: str, *facts: str) -> None:
        lines.append({"type": "entity", "name": name, "entityType": entity_type, "observations": list(facts)})

    def relate(source: str, relation_type: str, target: str) -> None:
        lines.append({"type": "relation", "from": source, "to": target, "relationType": relation_type})

    for index, (name, role) in enumerate(PEOPLE):
        add(name, "person", role, f"Joined in {2015 + index % 10}")
    for name in PROJECTS:
        add(name, "project", f"{name} ships this year")
    for name in ORGANISATIONS:
        add(name, "organisation", f"{name} is a customer")
    for name in PLACES:
        add(name, "place", f"An office in {name}")
    for name in TOOLS:
        add(name, "tool", f"{name} is used in production")
    add(CHAT, "tool", "Where the team talks")
    for index, (name, _) in enumerate(PEOPLE):
        relate(name, "worksAt", ORGANISATIONS[0] if index < 17 else ORGANISATIONS[1 + index % 2])
        relate(name, "worksOn", PROJECTS[index % len(PROJECTS)])
        relate(name, "basedIn", PLACES[index % len(PLACES)])
        relate(name, "uses", CHAT)
        if index % 3 == 0:
            relate(name, "uses", TOOLS[index % len(TOOLS)])
        if index % 4 == 1:
            relate(name, "mentors", PEOPLE[(index + 5) % len(PEOPLE)][0])
    for index, project in enumerate(PROJECTS):
        relate(project, "ownedBy", ORGANISATIONS[index % len(ORGANISATIONS)])
        relate(project, "uses", TOOLS[index % len(TOOLS)])
        relate(project, "uses", CHAT)
    return lines


async def team_memory(folder: Path) -> Path:
    """A SQLite memory holding the team, made by `graphmem import` of a JSONL file."""
    return await imported_memory(folder, "team", team_memory_lines())


WRITER = "writer-token-0123456789abcdef"
READER = "reader-token-0123456789abcdef"


@asynccontextmanager
async def team_server(folder: Path) -> AsyncIterator[NetworkServer]:
    """`graphmem serve --http` on a new team memory in `folder`: `ada` (WRITER) may write, `rita` (READER) read."""
    tokens = folder / "tokens"
    tokens.write_text(f"ada {WRITER} write\nrita {READER} read\n", encoding="utf-8")
    tokens.chmod(0o600)
    memory = await team_memory(folder)
    async with network_server(memory, "--http", "--no-semantic", "--tokens-file", str(tokens)) as server:
        yield server


async def imported_memory(folder: Path, name: str, lines: list[dict[str, Any]]) -> Path:
    """A SQLite memory `folder/NAME.db` made by `graphmem import` of the official JSONL `lines`."""
    source = folder / f"{name}.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    memory = folder / f"{name}.db"
    await anyio.run_process(
        [sys.executable, "-m", "graphmem", "import", "--no-semantic", str(source)],
        env=server_env(memory),
        check=True,
    )
    return memory
