"""The TypeScript SDK's own client (`@modelcontextprotocol/sdk`, default options) on graphmem over stdio and HTTP.

Claude Desktop, Claude Code, Cursor and VS Code are built on it. It speaks the initialize
handshake, offering its newest revision (2025-11-25); a client built on an older SDK offers its
own, so each revision graphmem claims through the handshake is offered in turn. Every tool of
the tools reference is called in page order and must answer what the page shows; the resources,
prompts and resource updates are checked too. tests/typescript_client.mjs drives the client.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.helpers_clients import sdk_client_env
from tests.helpers_docs import READS_THAT_RANK_BY_MEANING, ROOT, calls, matches, text_matches
from tests.helpers_network import network_server
from tests.helpers_npm import TYPESCRIPT_SDK

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SCRIPT = Path(__file__).parent / "typescript_client.mjs"

TOOLS_REFERENCE = calls(ROOT / "docs" / "tools.md")


def _job(server: dict[str, Any], offer: str | None) -> dict[str, Any]:
    return {
        "sdk": str(TYPESCRIPT_SDK.ensure()),
        "server": server,
        "offer": offer,
        "calls": [
            {"tool": call.tool, "arguments": call.arguments, "settle": call.tool in READS_THAT_RANK_BY_MEANING}
            for call in TOOLS_REFERENCE
        ],
        "watch": "Ada Lovelace",
    }


async def _drive(job: dict[str, Any]) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None  # TYPESCRIPT_SDK.ensure() skipped without it
    done = await anyio.run_process([node, str(SCRIPT)], input=json.dumps(job).encode("utf-8"), check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _assert_answers_as_shown(answer: dict[str, Any], revision: str) -> None:
    assert answer["protocolVersion"] == revision
    assert answer["tools"] == len({call.tool for call in TOOLS_REFERENCE})
    for call, got in zip(TOOLS_REFERENCE, answer["answers"], strict=True):
        if call.error is not None:
            assert got["isError"], f"{call.where}: {call.tool} succeeded, the page shows an error"
            assert text_matches(call.error, got["text"]), f"{call.where}: {call.tool} said\n{got['text']}"
            continue
        assert not got["isError"], f"{call.where}: {call.tool} failed: {got['text']}"
        if call.answer is not None:
            shown = json.dumps(got["structuredContent"], ensure_ascii=False)
            assert matches(call.answer, got["structuredContent"]), f"{call.where}: {call.tool} answered\n{shown}"
    assert '"name": "Ada Lovelace"' in answer["graph"]
    assert answer["resources"] == ["memory://knowledge-graph"]
    assert answer["prompts"] == ["chat-personalization", "memory-usage"]
    assert "Ada" in answer["prompt"]
    # Subscribed to the graph and to Ada before the calls: every write changed the graph, and
    # those about Ada changed her resource too.
    assert "memory://knowledge-graph" in answer["updates"]
    assert "memory://entity/Ada%20Lovelace" in answer["updates"]


@pytest.mark.parametrize("revision", list(reversed(HANDSHAKE_PROTOCOL_VERSIONS)))
async def test_the_typescript_client_over_stdio_gets_every_answer_the_reference_shows(tmp_path: Path, revision: str):
    memory = tmp_path / "memory.db"
    server = {
        "command": sys.executable,
        "args": ["-m", "graphmem", "serve", "--toolset", "all"],
        "env": sdk_client_env(memory),
    }
    offer = None if revision == HANDSHAKE_PROTOCOL_VERSIONS[-1] else revision
    with anyio.fail_after(120):
        answer = await _drive(_job(server, offer))
    _assert_answers_as_shown(answer, revision)


@pytest.mark.parametrize("revision", list(reversed(HANDSHAKE_PROTOCOL_VERSIONS)))
async def test_the_typescript_client_over_http_gets_every_answer_the_reference_shows(tmp_path: Path, revision: str):
    memory = tmp_path / "memory.db"
    offer = None if revision == HANDSHAKE_PROTOCOL_VERSIONS[-1] else revision
    with anyio.fail_after(120):
        async with network_server(memory, "--http", "--toolset", "all", env=sdk_client_env(memory)) as served:
            answer = await _drive(_job({"url": served.url}, offer))
    _assert_answers_as_shown(answer, revision)
