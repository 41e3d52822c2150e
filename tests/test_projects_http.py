"""One HTTP server, many projects: each request names its project (the `X-Graphmem-Project`
header, or its token's first project), and a token limited to projects reaches no other.

A real `graphmem serve --http` process with a tokens file, and the MCP SDK's client."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers_network import NetworkServer, network_server
from tests.helpers_stdio import entity

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = "alice-token-0123456789abcdef"
DOCS_BOT = "docs-bot-token-0123456789abcdef"


@asynccontextmanager
async def _session(
    server: NetworkServer, token: str, project: str | None = None, *, in_path: bool = False
) -> AsyncIterator[ClientSession]:
    """A client of `server` with `token`, naming `project` in a header, or in the URL (`in_path`)."""
    headers = {"authorization": f"Bearer {token}"}
    url = server.url
    if project is not None and in_path:
        url = f"{server.url}/projects/{urllib.parse.quote(project)}"
    elif project is not None:
        headers["x-graphmem-project"] = project
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _names(result: Any) -> list[str]:
    assert result.is_error is False, result.content
    return [item["name"] for item in result.structured_content["entities"]]


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "tokens"
    path.write_text(f"alice {ALICE} write\ndocs-bot {DOCS_BOT} write docs\n", encoding="utf-8")
    path.chmod(0o600)
    return {"GRAPHMEM_TOKENS_FILE": str(path)}


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A SQLite file, or a PostgreSQL memory on the test server (skipped, with the reason, where none can be had)."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return tmp_path / "memory.db"


async def test_two_clients_on_two_projects_of_one_server_see_their_own(memory: Path | str, tokens: dict[str, str]):
    async with (
        network_server(memory, "--http", "--no-semantic", env=tokens) as server,  # type: ignore[arg-type]
        _session(server, ALICE, "api") as api,
        # A key with slashes and a letter beyond ASCII, in the URL.
        _session(server, ALICE, "github.com/acme/café", in_path=True) as web,
    ):
        await api.call_tool("create_entities", {"entities": [entity("README", "explains the api")]})
        await web.call_tool("create_entities", {"entities": [entity("README", "explains the web app")]})
        await api.call_tool("create_entities", {"entities": [entity("Alice", "leads both")], "project": "shared"})
        api_graph = await api.call_tool("read_graph", {})
        assert _names(api_graph) == ["README", "Alice"]
        assert api_graph.structured_content["entities"][0]["observations"] == ["explains the api"]
        assert _names(await web.call_tool("search_nodes", {"query": "explains"})) == ["README"]
        across = await web.call_tool("open_nodes", {"names": ["README"], "project": "*"})
        assert across.structured_content["projects"] == ["api", "café"]


async def test_a_token_limited_to_a_project_reaches_it_and_the_shared_space_only(
    tmp_path: Path, tokens: dict[str, str]
):
    async with network_server(tmp_path / "memory.db", "--http", "--no-semantic", env=tokens) as server:
        async with _session(server, ALICE, "api") as alice:
            await alice.call_tool("create_entities", {"entities": [entity("secret plan", "in the api project")]})
            await alice.call_tool(
                "create_entities", {"entities": [entity("Alice", "writes docs")], "project": "shared"}
            )
        async with _session(server, DOCS_BOT) as bot:
            # Its first project is its default: no header needed.
            await bot.call_tool("create_entities", {"entities": [entity("guide", "how to start")]})
            assert sorted(_names(await bot.call_tool("read_graph", {}))) == ["Alice", "guide"]
            for project in ("api", "*"):
                refused = await bot.call_tool("read_graph", {"project": project})
                assert refused.is_error is True
                assert "this token may reach 'docs'" in refused.content[0].text
            # Nor through the resources.
            whole = json.loads((await bot.read_resource("memory://knowledge-graph")).contents[0].text)
            assert sorted(entity["name"] for entity in whole["entities"]) == ["Alice", "guide"]
            with pytest.raises(MCPError, match="not found"):
                await bot.read_resource("memory://entity/secret plan")
        async with _session(server, DOCS_BOT, "api") as bot_in_api:
            refused = await bot_in_api.call_tool("search_nodes", {"query": "secret"})
            assert refused.is_error is True and "may reach 'docs'" in refused.content[0].text
