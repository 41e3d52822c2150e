"""Projects as a person working in three folders meets them: one memory file, a server started
by the client in each folder with `--project auto`, and the MCP SDK's own client.

Two git repositories (one with a remote, one without) and a plain folder; what is written in
one is not seen in the others, what is written to the shared space is seen in all, and a
search across every project says where each answer lives.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers_clients import sdk_client_env
from tests.helpers_stdio import START_SECONDS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    """A home, and in it: `api` (a clone of github.com/acme/api), `tool` (git, no remote), `notes`."""
    home = tmp_path / "home"
    api, tool, notes = home / "src" / "api", home / "src" / "tool", home / "notes"
    for folder in (api, tool, notes):
        folder.mkdir(parents=True)
    for repository in (api, tool):
        subprocess.run(["git", "init", "-q", str(repository)], check=True)
    subprocess.run(["git", "-C", str(api), "remote", "add", "origin", "git@github.com:Acme/API.git"], check=True)
    (api / "pkg").mkdir()
    return {"home": home, "api": api, "tool": tool, "notes": notes, "memory": tmp_path / "memory.db"}


@asynccontextmanager
async def _client_in(folders: dict[str, Path], where: Path, roots: list[Path] | None = None) -> AsyncIterator[Client]:
    """A server started as a client starts it: in `where`, with `--project auto`; a client that
    offers `roots` answers roots/list with them."""
    env = {**sdk_client_env(folders["memory"]), "HOME": str(folders["home"])}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem", "--project", "auto"], env=env, cwd=str(where)
    )
    options: dict[str, Any] = {}
    if roots is not None:

        async def list_roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=folder.as_uri()) for folder in roots])

        options["list_roots_callback"] = list_roots
    with anyio.fail_after(START_SECONDS * 2):
        async with Client(server, mode="legacy", **options) as client:
            yield client


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    return structured


def _names(answer: dict[str, Any]) -> list[str]:
    return [entity["name"] for entity in answer["entities"]]


async def test_each_folder_keeps_its_own_memory_and_shares_the_shared_space(folders: dict[str, Path]):
    async with _client_in(folders, folders["api"] / "pkg") as api:
        # The model is told, and never has to pass a project.
        assert "project api" in (api.instructions or "")
        await _call(
            api,
            "create_entities",
            entities=[{"name": "README", "entityType": "file", "observations": ["explains the api"]}],
        )
        await _call(
            api,
            "create_entities",
            entities=[{"name": "Alice", "entityType": "person", "observations": ["prefers small pull requests"]}],
            project="shared",
        )
    async with _client_in(folders, folders["tool"]) as tool:
        await _call(
            tool,
            "create_entities",
            entities=[{"name": "README", "entityType": "file", "observations": ["explains the tool"]}],
        )
        seen = await _call(tool, "read_graph")
        assert sorted(_names(seen)) == ["Alice", "README"]
        assert "projects" not in seen  # one project and the shared space: the official shape
        (readme,) = [entity for entity in seen["entities"] if entity["name"] == "README"]
        assert readme["observations"] == ["explains the tool"]
    async with _client_in(folders, folders["notes"]) as notes:
        assert _names(await _call(notes, "read_graph")) == ["Alice"]
        across = await _call(notes, "search_nodes", query="explains", project="*")
        where = dict(zip([json.dumps(e["observations"]) for e in across["entities"]], across["projects"], strict=True))
        assert where == {'["explains the api"]': "api", '["explains the tool"]': "tool"}
    async with _client_in(folders, folders["api"]) as api:
        found = await _call(api, "search_nodes", query="explains")
        assert [entity["observations"] for entity in found["entities"]] == [["explains the api"]]


async def test_a_client_s_root_names_the_project_when_it_starts_the_server_elsewhere(folders: dict[str, Path]):
    # A client that starts servers in the home directory but offers its workspace as a root.
    async with _client_in(folders, folders["home"], roots=[folders["tool"]]) as tool:
        await _call(tool, "create_entities", entities=[{"name": "cli", "entityType": "program", "observations": []}])
    async with _client_in(folders, folders["tool"]) as in_tool, _client_in(folders, folders["api"]) as in_api:
        assert _names(await _call(in_tool, "read_graph")) == ["cli"]
        assert _names(await _call(in_api, "read_graph")) == []
