"""Access for a team (issue 18, item 4): named tokens, read-only ones refused writes, and authors recorded.

Real `graphmem serve --http` / `--tcp` processes with a tokens file, and the MCP SDK's client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession

from graphmem.config import Settings
from graphmem.core.models import Graph
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store
from graphmem.transports.tcp import UNAUTHORIZED
from tests.helpers_network import network_server, tcp_client, tcp_session
from tests.helpers_stdio import INITIALIZE, INITIALIZED, entity
from tests.test_durability import stored_graph
from tests.test_http import ACCEPT, sdk_session

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = "alice-token-0123456789abcdef"
CI = "ci-token-0123456789abcdef"
READ_ONLY = "may only read"
ASK = "Ask the server's operator for a write token"


def team_env(tmp_path: Path) -> dict[str, str]:
    """A tokens file with alice (write) and ci (read), named by the environment."""
    path = tmp_path / "tokens"
    path.write_text(f"# the team\nalice {ALICE} write\nci {CI} read\n", encoding="utf-8")
    path.chmod(0o600)
    return {"GRAPHMEM_TOKENS_FILE": str(path)}


def structured(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content
    return result.structured_content


def stored_graph_at(database: str) -> Graph:
    """The graph in a PostgreSQL memory, read with a store of its own (not through any server)."""
    store = open_store(Settings(database_url=database, semantic=False))
    try:
        return KnowledgeGraph(store).read_graph()
    finally:
        store.close()


async def check_team_access(alice: ClientSession, ci: ClientSession) -> None:
    """What every transport must do for the two tokens."""
    created = await alice.call_tool("create_entities", {"entities": [entity("Ada", "wrote notes")]})
    assert created.is_error is False
    found = structured(await ci.call_tool("search_nodes", {"query": "Ada"}))
    assert [e["name"] for e in found["entities"]] == ["Ada"]

    refused = await ci.call_tool("create_entities", {"entities": [entity("Mallory", "was here")]})
    assert refused.is_error is True
    assert READ_ONLY in refused.content[0].text and ASK in refused.content[0].text
    assert "(ci)" in refused.content[0].text
    refused_delete = await ci.call_tool("delete_entities", {"entityNames": ["Ada"]})
    assert refused_delete.is_error is True and READ_ONLY in refused_delete.content[0].text

    graph = structured(await ci.call_tool("read_graph", {}))
    assert [e["name"] for e in graph["entities"]] == ["Ada"]
    assert graph["entities"][0]["observations"] == ["wrote notes"]

    history = structured(await ci.call_tool("get_observation_history", {"entityName": "Ada", "observationId": "obs_1"}))
    assert [version.get("author") for version in history["history"]] == ["alice"]
    analytics = structured(await ci.call_tool("get_analytics", {}))
    assert [(c["entityName"], c.get("by")) for c in analytics["recent_changes"]] == [("Ada", "alice")]


async def test_over_http_a_read_token_searches_but_cannot_write_and_the_write_token_is_recorded_as_author(
    tmp_path: Path,
):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(60):
        async with (
            network_server(memory, "--http", "--toolset", "all", env=team_env(tmp_path)) as server,
            sdk_session(server, ALICE) as alice,
            sdk_session(server, CI) as ci,
        ):
            await check_team_access(alice, ci)
            assert await server.stop() == 0
    (ada,) = stored_graph(memory).entities
    assert ada.extra is not None and ada.extra["createdBy"] == "alice"
    assert ada.extra["observationMeta"][0]["author"] == "alice"


async def test_over_http_a_token_not_in_the_tokens_file_gets_401(tmp_path: Path):
    with anyio.fail_after(60):
        async with (
            network_server(tmp_path / "m.db", "--http", env=team_env(tmp_path)) as server,
            httpx2.AsyncClient() as http,
        ):
            wrong = await http.post(
                server.url, json=INITIALIZE, headers={**ACCEPT, "authorization": f"Bearer {ALICE[:-1]}x"}
            )
            right = await http.post(server.url, json=INITIALIZE, headers={**ACCEPT, "authorization": f"Bearer {CI}"})
    assert wrong.status_code == 401
    assert right.status_code == 200


async def test_over_tcp_a_read_token_cannot_write_and_the_write_token_is_recorded_as_author(tmp_path: Path):
    memory = tmp_path / "memory.db"
    with anyio.fail_after(60):
        async with (
            network_server(memory, "--tcp", "--toolset", "all", env=team_env(tmp_path)) as server,
            tcp_session(server, ALICE) as alice,
            tcp_session(server, CI) as ci,
        ):
            await check_team_access(alice, ci)
            async with tcp_client(server) as stranger:
                wrong = await stranger.authenticate("nobody-token-0123456789")
    assert wrong["error"]["code"] == UNAUTHORIZED
    assert [e.name for e in stored_graph(memory).entities] == ["Ada"]


async def test_the_serve_flag_takes_the_tokens_file_too(tmp_path: Path):
    tokens = team_env(tmp_path)["GRAPHMEM_TOKENS_FILE"]
    with anyio.fail_after(60):
        async with (
            network_server(tmp_path / "m.db", "--http", "--tokens-file", tokens) as server,
            sdk_session(server, CI) as ci,
        ):
            refused = await ci.call_tool("create_entities", {"entities": [entity("Ada")]})
    assert refused.is_error is True and READ_ONLY in refused.content[0].text


async def test_on_a_postgresql_memory_tokens_and_authors_work_as_on_a_file(tmp_path: Path, postgres_url: str):
    # A team's HTTP server on its database: the same refusals, and the author kept in the database.
    env = team_env(tmp_path) | {"MEMORY_FILE_PATH": postgres_url}
    with anyio.fail_after(60):
        async with (
            network_server(tmp_path / "logs", "--http", "--toolset", "all", "--no-semantic", env=env) as server,
            sdk_session(server, ALICE) as alice,
            sdk_session(server, CI) as ci,
        ):
            await check_team_access(alice, ci)
            assert await server.stop() == 0
    (ada,) = stored_graph_at(postgres_url).entities
    assert ada.extra is not None and ada.extra["createdBy"] == "alice"


async def test_over_http_a_session_answers_only_the_token_that_opened_it_and_its_id_is_never_logged(tmp_path: Path):
    # Issue 27, item 16: any valid token could use or end another person's session by its id.
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    create = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "create_entities", "arguments": {"entities": [entity("Mallory", "was here")]}},
        }
    )
    as_alice = ACCEPT | {"authorization": f"Bearer {ALICE}"}
    as_ci = ACCEPT | {"authorization": f"Bearer {CI}"}
    with anyio.fail_after(30):
        async with (
            network_server(tmp_path / "m.db", "--http", "--log-level", "info", env=team_env(tmp_path)) as server,
            httpx2.AsyncClient() as http,
        ):
            opened = await http.post(server.url, content=json.dumps(INITIALIZE), headers=as_alice)
            session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            await http.post(server.url, content=json.dumps(INITIALIZED), headers=as_alice | session)
            borrowed_ping = await http.post(server.url, content=ping, headers=as_ci | session)
            borrowed_call = await http.post(server.url, content=create, headers=as_ci | session)
            borrowed_delete = await http.delete(server.url, headers=as_ci | session)
            unknown = await http.post(server.url, content=ping, headers=as_ci | {"mcp-session-id": "0" * 32})
            own = await http.post(server.url, content=ping, headers=as_alice | session)
            ended = await http.delete(server.url, headers=as_alice | session)
            assert await server.stop() == 0
    assert [borrowed_ping.status_code, borrowed_call.status_code, borrowed_delete.status_code] == [404, 404, 404]
    assert borrowed_ping.json() == unknown.json(), "another person's session looks exactly like an unknown one"
    assert (own.status_code, ended.status_code) == (200, 200)
    assert stored_graph(tmp_path / "m.db").entities == ()
    assert session["mcp-session-id"] not in server.stderr.decode("utf-8", errors="replace")
    assert "session" in server.stderr.decode("utf-8", errors="replace").lower(), "the server did log at info"
