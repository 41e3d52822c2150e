"""Every tool, resource, prompt and notice on every protocol revision graphmem claims, through the SDK's client.

graphmem speaks the revisions of the SDK it is built on: those of the initialize handshake
(2024-11-05 to 2025-11-25) and 2026-07-28, whose requests each carry their own envelope and
which the SDK's `Client` in its default mode ("auto") discovers and prefers. The list comes from
the SDK, so a revision a new SDK adds is tested here as soon as graphmem is built on it.

Each test runs once per revision and transport (in process, stdio, HTTP, TCP). The SDK's client
offers only its newest handshake revision; a client built on an older SDK offers its own, so to
be one the tests make it offer the revision under test.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.client.session
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from graphmem.server import GRAPH_URI
from graphmem.tools.resources import entity_uri
from tests.helpers_clients import TRANSPORTS, Connect, Serve
from tests.helpers_docs import ROOT, answers_as_shown, calls

pytestmark = pytest.mark.anyio

REVISIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
"""Every revision graphmem claims: the SDK's."""

EVERY_TOOL = Serve(toolset="all")

JSON_ANSWERS = Serve(json_response=True)

NOTICE_SECONDS = 10
"""How long a notice may take to arrive on its own stream (on a busy machine)."""


@pytest.fixture(params=REVISIONS)
def revision(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param in HANDSHAKE_PROTOCOL_VERSIONS:
        monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", request.param)
    return str(request.param)


@asynccontextmanager
async def speaking(
    revision: str, connect: Connect, memory: Path, serve: Serve = EVERY_TOOL, **options: Any
) -> AsyncIterator[Client]:
    """A client that speaks `revision`: the SDK's default mode for 2026-07-28, the handshake before it."""
    mode = "auto" if revision in MODERN_PROTOCOL_VERSIONS else "legacy"
    async with connect(memory, serve, mode=mode, **options) as client:
        assert client.session.protocol_version == revision
        yield client


def _entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def _fact(name: str, text: str) -> dict[str, Any]:
    return {"observations": [{"entityName": name, "contents": [text]}]}


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result
    return result.structured_content


async def test_the_sdks_default_client_speaks_the_newest_revision(connect: Connect, tmp_path):
    # No mode given: what an application built on the SDK gets.
    async with connect(tmp_path / "memory.db", Serve(), mode="auto") as client:
        assert client.session.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
        created = await _call(client, "create_entities", {"entities": [_entity("Ada", "wrote the first program")]})
        assert created == {"entities": [_entity("Ada", "wrote the first program")]}
        assert await _call(client, "read_graph", {}) == {"entities": created["entities"], "relations": []}


async def test_every_tool_answers_what_the_tools_reference_shows(revision: str, connect: Connect, tmp_path):
    # Every tool there is (docs/tools.md has an example of each, with its answer), in page order.
    async with speaking(revision, connect, tmp_path / "memory.db") as client:
        listed = await client.list_tools()
        assert len(listed.tools) == len({call.tool for call in calls(ROOT / "docs" / "tools.md")})
        await answers_as_shown(client, calls(ROOT / "docs" / "tools.md"))


async def test_a_tool_error_and_bad_arguments_are_tool_errors(revision: str, connect: Connect, tmp_path):
    async with speaking(revision, connect, tmp_path / "memory.db") as client:
        missing = await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}
        )
        assert missing.is_error is True
        assert "Entity with name Nobody not found" in missing.content[0].text  # type: ignore[union-attr]
        wrong = await client.call_tool("create_entities", {"entities": "Ada"})
        assert wrong.is_error is True
        assert "Input validation error" in wrong.content[0].text  # type: ignore[union-attr]


async def test_resources_and_prompts_answer(revision: str, connect: Connect, tmp_path):
    async with speaking(revision, connect, tmp_path / "memory.db") as client:
        await _call(client, "create_entities", {"entities": [_entity("Ada", "wrote the first program")]})
        assert [str(resource.uri) for resource in (await client.list_resources()).resources] == [GRAPH_URI]
        templates = (await client.list_resource_templates()).resource_templates
        assert [template.name for template in templates] == ["entity"]
        graph = await client.read_resource(GRAPH_URI)
        assert '"name": "Ada"' in graph.contents[0].text  # type: ignore[union-attr]
        ada = await client.read_resource(entity_uri("Ada"))
        assert "wrote the first program" in ada.contents[0].text  # type: ignore[union-attr]
        prompts = (await client.list_prompts()).prompts
        assert {prompt.name for prompt in prompts} == {"memory-usage", "chat-personalization"}
        prompt = await client.get_prompt("chat-personalization", {"user": "Ada"})
        assert "Ada" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_a_watcher_hears_of_writes_that_change_what_it_watches(revision: str, connect: Connect, tmp_path):
    # Up to 2025-11-25 a client subscribes and hears on its connection; from 2026-07-28 on it
    # opens a subscriptions/listen stream naming what it watches.
    assert await _watched_updates(revision, connect, tmp_path / "memory.db", EVERY_TOOL) == [
        GRAPH_URI,
        GRAPH_URI,
        entity_uri("Ada"),
    ]


@pytest.mark.slow
async def test_over_http_with_json_answers_a_watcher_hears_of_writes_too(revision: str, tmp_path):
    # With --json-response a POST's answer is one JSON body, which carries no notices.
    updates = await _watched_updates(revision, TRANSPORTS["http"], tmp_path / "memory.db", JSON_ANSWERS)
    assert updates == [GRAPH_URI, GRAPH_URI, entity_uri("Ada")]


async def _watched_updates(revision: str, connect: Connect, memory: Path, serve: Serve) -> list[str]:
    """The updates a client watching the graph and Ada hears of while Ben's and Ada's facts are written."""
    updates: list[str] = []
    heard = anyio.Event()
    modern = revision in MODERN_PROTOCOL_VERSIONS

    async def on_message(message: Any) -> None:
        # From 2026-07-28 on the SDK hands the stream's notices here too: the stream is read below.
        if isinstance(message, types.ResourceUpdatedNotification) and not modern:
            updates.append(str(message.params.uri))

    ada = entity_uri("Ada")
    async with speaking(revision, connect, memory, serve, message_handler=on_message) as client:
        await _call(client, "create_entities", {"entities": [_entity("Ada"), _entity("Ben")]})
        if modern:
            async with client.listen(resource_subscriptions=[GRAPH_URI, ada]) as stream:

                async def collect() -> None:
                    async for event in stream:
                        updates.append(event.uri)  # type: ignore[union-attr]
                        if event.uri == ada:  # type: ignore[union-attr]
                            heard.set()

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(collect)
                    await _call(client, "add_observations", _fact("Ben", "x"))
                    await _call(client, "add_observations", _fact("Ada", "y"))
                    with anyio.fail_after(NOTICE_SECONDS):
                        await heard.wait()
                    tasks.cancel_scope.cancel()
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(GRAPH_URI)
                await client.subscribe_resource(ada)
            await _call(client, "add_observations", _fact("Ben", "x"))
            await _call(client, "add_observations", _fact("Ada", "y"))
            # Over HTTP with JSON answers they come on the session's own stream, after the answer.
            with anyio.fail_after(NOTICE_SECONDS):
                while len(updates) < 3:
                    await anyio.sleep(0.01)
    # Ben's fact changed the graph; Ada's changed the graph and Ada.
    return updates


def _jsonl_memory(tmp_path: Path) -> Path:
    memory = tmp_path / "memory.jsonl"
    memory.write_text('{"type": "entity", "name": "A", "entityType": "t", "observations": []}\n')
    return memory


async def test_a_client_that_asks_for_warnings_gets_them(revision: str, connect: Connect, tmp_path):
    # Up to 2025-11-25 a client asks with logging/setLevel; from 2026-07-28 on each request says
    # in its _meta from what level it wants them (the SDK's Client(log_level=...) stamps it).
    messages = await _warnings_heard(revision, connect, tmp_path, Serve())
    assert [message.level for message in messages] == ["warning"]
    assert "is skipped" in str(messages[0].data)


@pytest.mark.slow
async def test_over_http_with_json_answers_warnings_reach_every_revision_that_has_a_stream_for_them(
    revision: str, tmp_path
):
    # Up to 2025-11-25 they go on the session's GET stream. A 2026-07-28 request's messages may
    # only ride that request's own answer, which --json-response makes one JSON body: there is
    # no wire for them (docs/serving.md says so; SSE answers, the default, carry them).
    expected = [] if revision in MODERN_PROTOCOL_VERSIONS else ["warning"]
    messages = await _warnings_heard(revision, TRANSPORTS["http"], tmp_path, JSON_ANSWERS, wait=bool(expected))
    assert [message.level for message in messages] == expected


async def _warnings_heard(
    revision: str, connect: Connect, tmp_path: Path, serve: Serve, *, wait: bool = True
) -> list[types.LoggingMessageNotificationParams]:
    """The log messages a client asking for warnings hears while graphmem skips a bad line of its file."""
    messages: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        messages.append(params)

    memory = _jsonl_memory(tmp_path)
    modern = revision in MODERN_PROTOCOL_VERSIONS
    options: dict[str, Any] = {"logging_callback": on_log} | ({"log_level": "warning"} if modern else {})
    async with speaking(revision, connect, memory, serve, **options) as client:
        if not modern:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.set_logging_level("warning")
        # Another process leaves a line that is not JSON: graphmem warns when it reads the file again.
        with memory.open("a", encoding="utf-8") as file:
            file.write("this is not json\n")
        await _call(client, "read_graph", {})
        with anyio.fail_after(NOTICE_SECONDS):
            while wait and not messages:
                await anyio.sleep(0.01)
    return messages
