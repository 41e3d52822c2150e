"""The explorer as people start it: `graphmem serve --http` and `graphmem view`, real processes on
loopback, with MCP clients on the same server hearing what the explorer changed.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.helpers_network import network_server
from tests.helpers_stdio import START_SECONDS, server_env
from tests.test_team_access import ALICE, CI, team_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

_VIEW_ANNOUNCE = re.compile(rb"at (http://\S+)")


@asynccontextmanager
async def viewing(
    memory: Path, *args: str, env: dict[str, str] | None = None, browser: bool = False
) -> AsyncIterator[tuple[str, str]]:
    """`graphmem view` on `memory` (with `--no-browser` unless `browser`): the page's root and the run's token."""
    command = [sys.executable, "-m", "graphmem", "view", *([] if browser else ["--no-browser"]), *args]
    process = await anyio.open_process(command, env=server_env(memory) | (env or {}))
    assert process.stderr is not None
    said = b""
    try:
        with anyio.fail_after(START_SECONDS):
            while (match := _VIEW_ANNOUNCE.search(said)) is None:
                said += await process.stderr.receive()
        address = match.group(1).decode("ascii")
        root, _, token = address.partition("/#token=")
        yield root, token
    finally:
        process.terminate()
        with anyio.fail_after(START_SECONDS):
            await process.wait()
        await process.aclose()


async def test_view_serves_the_memory_on_loopback_with_a_key_made_for_the_run(tmp_path: Path):
    memory = tmp_path / "m.db"
    with anyio.fail_after(60):
        async with viewing(memory) as (root, token), viewing(memory) as (_, another):
            # Not a browser session: the address's fragment never reaches the server; the page sends the token.
            browser = httpx2.AsyncClient(base_url=root)
            async with browser:
                page = await browser.get("/")
                refused = await browser.get("/api/session")
                session = await browser.get("/api/session", headers={"authorization": f"Bearer {token}"})
    assert root.startswith("http://127.0.0.1:")
    assert len(token) >= 32 and token != another
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert refused.status_code == 401
    assert session.json()["canWrite"] is True


async def test_view_opens_the_default_browser_without_the_key_on_its_command_line(tmp_path: Path):
    # Python's webbrowser runs $BROWSER when it is set: a script here notes what it is given.
    # Every user of the machine can read a command line: the key goes in a private file instead.
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n', encoding="utf-8")
    browser.chmod(0o755)
    with anyio.fail_after(60):
        async with viewing(tmp_path / "m.db", env={"BROWSER": f"{browser} %s"}, browser=True) as (root, token):
            while not opened.exists() or not opened.read_text(encoding="utf-8"):
                await anyio.sleep(0.05)
            argument = opened.read_text(encoding="utf-8")
            redirect = Path(argument.removeprefix("file://"))
            page = redirect.read_text(encoding="utf-8")
            mode = redirect.stat().st_mode & 0o777
            folder_mode = redirect.parent.stat().st_mode & 0o777
            target = re.search(r'url=([^"]+)"', page)
            assert target is not None
            async with httpx2.AsyncClient(base_url=root) as client:
                served = await client.get("/")
    assert token not in argument and argument.startswith("file://")
    assert html.unescape(target.group(1)) == f"{root}/#token={token}"
    assert mode == 0o600 and folder_mode == 0o700
    assert served.status_code == 200
    assert not redirect.exists()  # removed when the explorer stopped


async def test_view_on_port_0_takes_edits_from_its_own_page_and_refuses_other_local_pages(tmp_path: Path):
    # Issue 27, item 19: the Origin check knows the port the server was given, 0 included.
    memory = tmp_path / "m.db"
    with anyio.fail_after(60):
        async with viewing(memory, "--port", "0") as (root, token):
            port = int(root.rsplit(":", 1)[1])
            bearer = {"authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(base_url=root, headers=bearer) as browser:

                async def add(origin: str, name: str) -> int:
                    body = {"name": name, "type": "person"}
                    return (await browser.post("/api/entities/add", json=body, headers={"origin": origin})).status_code

                own = await add(root, "Ada")
                by_name = await add(f"http://localhost:{port}", "Grace")
                other_port = await add(f"http://127.0.0.1:{port + 1}", "Mallory")
    assert (own, by_name, other_port) == (200, 200, 403)


async def test_view_read_only_offers_no_edits_and_refuses_them(tmp_path: Path):
    memory = tmp_path / "m.db"
    with anyio.fail_after(60):
        async with viewing(memory, "--read-only") as (root, token):
            bearer = {"authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(base_url=root, headers=bearer) as browser:
                session = (await browser.get("/api/session")).json()
                edit = await browser.post("/api/entities/add", json={"name": "Ada", "type": "person"})
    assert session["canWrite"] is False
    assert edit.status_code == 403


async def test_view_on_a_port_in_use_says_so_and_what_to_do(tmp_path: Path):
    with anyio.fail_after(60):
        async with viewing(tmp_path / "m.db") as (root, _):
            port = root.rsplit(":", 1)[1]
            second = await anyio.run_process(
                [sys.executable, "-m", "graphmem", "view", "--no-browser", "--port", port],
                env=server_env(tmp_path / "other.db"),
                check=False,
            )
    assert second.returncode != 0
    assert b"Cannot listen" in second.stderr and b"--port" in second.stderr


class Heard:
    """The resource updates a client heard; they arrive on its GET stream, whenever the server sends them."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._new = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._new.set()
            self._new = anyio.Event()

    async def at_least(self, count: int, uri: str) -> None:
        with anyio.fail_after(10):
            while self.uris.count(uri) < count:
                await self._new.wait()


@asynccontextmanager
async def subscribed(url: str, token: str, uri: str, heard: Heard) -> AsyncIterator[ClientSession]:
    """An MCP client on the server, subscribed to `uri`, noting each update it hears."""
    on_message = heard.on_message

    async with (
        create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        with pytest.warns(MCPDeprecationWarning):
            await session.subscribe_resource(uri)
        yield session


async def test_an_edit_in_the_explorer_reaches_mcp_clients_and_their_subscriptions(tmp_path: Path):
    memory = tmp_path / "m.db"
    heard = Heard()
    with anyio.fail_after(90):
        async with (
            network_server(memory, "--http", env=team_env(tmp_path)) as server,
            subscribed(server.url, CI, "memory://entity/Atlas", heard) as agent,
        ):
            answer = await _explorer_post(
                server.base, "/api/entities/add", {"name": "Atlas", "type": "project", "texts": ["v1"]}
            )
            assert answer["entity"]["createdBy"] == "alice"
            edited = await _explorer_post(
                server.base, "/api/facts/edit", {"name": "Atlas", "id": "obs_1", "text": "v2"}
            )
            assert [fact["text"] for fact in edited["entity"]["facts"]] == ["v2"]
            await heard.at_least(2, "memory://entity/Atlas")
            found = await agent.call_tool("open_nodes", {"names": ["Atlas"]})
    assert found.structured_content["entities"][0]["observations"] == ["v2"]


async def _explorer_post(base: str, route: str, body: dict[str, Any]) -> Any:
    async with httpx2.AsyncClient(base_url=base, headers={"authorization": f"Bearer {ALICE}"}) as client:
        response = await client.post(route, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def test_serve_http_says_where_the_explorer_is(tmp_path: Path):
    with anyio.fail_after(60):
        async with network_server(tmp_path / "m.db", "--http") as server:
            with anyio.fail_after(10):
                while b"explorer" not in server.stderr:
                    await anyio.sleep(0.05)
            async with httpx2.AsyncClient(base_url=server.base) as browser:
                added = await browser.post("/api/entities/add", json={"name": "Ada", "type": "person"})
    assert f"explorer (in a browser) at {server.base}/".encode() in server.stderr
    assert added.status_code == 200
