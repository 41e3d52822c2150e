"""build_server(settings): the MCP server with the tools and the graph resource.

It uses the SDK's low-level `Server`, because the official tool listing has to be
reproduced to the letter (schemas, titles, annotations) and because it is the lean
path through the SDK: one dispatch per call, no per-call schema generation. The
store lives in the lifespan; calls reach it on a worker thread, one at a time.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from graphmem._version import __version__
from graphmem.config import Settings
from graphmem.errors import GraphmemError
from graphmem.graph import KnowledgeGraph
from graphmem.storage import open_store
from graphmem.tools import ALL_TOOLS, ToolContext, ToolOutput, ToolSpec, dump_json
from graphmem.tools.toolsets import select_tools

__all__ = ["GRAPH_URI", "AppState", "build_server", "initialization_options"]

logger = logging.getLogger(__name__)

GRAPH_URI = "memory://knowledge-graph"

T = TypeVar("T")


@dataclass
class AppState:
    """What the server holds while it runs: the graph and who subscribed to what."""

    tools: ToolContext
    # One worker at a time reaches the store: SQLite has one writer anyway, and it keeps
    # a long read from interleaving with a write on the same connection.
    limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(1))
    subscribers: weakref.WeakKeyDictionary[Connection, set[str]] = field(default_factory=weakref.WeakKeyDictionary)
    """The resource URIs each client connection subscribed to."""

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking graph code on a worker thread, so the event loop keeps serving."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)


def _format_validation_error(tool: str, error: ValidationError) -> str:
    problems = []
    for issue in error.errors(include_url=False):
        path = ""
        for part in issue["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        problems.append(f"{path or '(arguments)'}: {issue['msg']}")
    return (
        f"Input validation error: Invalid arguments for tool {tool}: "
        + "; ".join(problems)
        + ". Fix the arguments to match the tool's input schema and call it again."
    )


def _connection_of(session: ServerSession) -> Connection:
    # The SDK builds a new ServerSession for every request, so a subscription keyed on
    # one would be forgotten as soon as the subscribe request ends; the connection it
    # wraps lives as long as the client does.
    connection: Connection = session._connection
    return connection


def _tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _tool_result(output: ToolOutput) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=output.text)]
    content += [types.TextContent(type="text", text=note) for note in output.notes]
    return types.CallToolResult(content=content, structured_content=output.structured, is_error=output.is_error)


def build_server(settings: Settings, tools: tuple[ToolSpec, ...] | None = None) -> Server[AppState]:
    """The MCP server for one memory, ready for any transport.

    Args:
        settings: the memory and how to serve it.
        tools: the tools to list; by default those the settings' toolset (or tool list) chooses.

    Raises:
        ConfigError: the settings name a toolset or tool that does not exist.
    """
    if tools is None:
        tools = select_tools(ALL_TOOLS, settings.toolset, settings.tools)
    specs = {spec.name: spec for spec in tools}
    listing = types.ListToolsResult(tools=[spec.listing() for spec in tools])

    @asynccontextmanager
    async def lifespan(_: Server[AppState]) -> AsyncIterator[AppState]:
        store = await anyio.to_thread.run_sync(open_store, settings)
        try:
            graph = KnowledgeGraph(store, strict=settings.strict, limits=settings.limits)
            yield AppState(ToolContext(graph, settings.response_budget))
        finally:
            await anyio.to_thread.run_sync(store.close)

    async def list_tools(
        ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[AppState], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            # A tool result, not a JSON-RPC error, as the official server answers; its text
            # starts with the official one.
            return _tool_error(
                f"MCP error -32602: Tool {params.name} not found. Call tools/list to see the tools there are."
            )
        try:
            arguments = spec.arguments.model_validate(params.arguments or {})
        except ValidationError as error:
            return _tool_error(_format_validation_error(spec.name, error))
        state = ctx.lifespan_context
        try:
            output = await state.run(spec.run, state.tools, arguments)
        except GraphmemError as error:
            return _tool_error(str(error))
        except Exception as error:
            # The top-level handler: a bug must not take the connection down. The store
            # rolled the transaction back, so the message can promise that.
            logger.exception("tool %s failed", spec.name)
            return _tool_error(
                f"graphmem failed unexpectedly ({type(error).__name__}: {error}); nothing was changed. "
                "Please report this."
            )
        if output.changed:
            await _notify_graph_updated(state)
        return _tool_result(output)

    async def list_resources(
        ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=GRAPH_URI,
                    name="knowledge-graph",
                    title="Knowledge Graph",
                    description="The full knowledge graph with all entities and relations",
                    mime_type="application/json",
                )
            ]
        )

    async def list_resource_templates(
        ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        # graphmem has no templates, but the official server answers with an empty list
        # rather than "Method not found", and clients that list both expect that.
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read_resource(
        ctx: ServerRequestContext[AppState], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != GRAPH_URI:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Resource {params.uri} not found; call resources/list to see the resources.",
            )
        state = ctx.lifespan_context
        graph = await state.run(state.tools.graph.read_graph)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=GRAPH_URI, mime_type="application/json", text=dump_json(graph.to_wire()))
            ]
        )

    async def subscribe(ctx: ServerRequestContext[AppState], params: types.SubscribeRequestParams) -> types.EmptyResult:
        ctx.lifespan_context.subscribers.setdefault(_connection_of(ctx.session), set()).add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[AppState], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        ctx.lifespan_context.subscribers.get(_connection_of(ctx.session), set()).discard(str(params.uri))
        return types.EmptyResult()

    server = Server(
        "graphmem",
        version=__version__,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
    )
    # The SDK wraps every message in an OpenTelemetry span by default; with no exporter
    # installed it records nothing, yet it costs a sixth of a ping. The SDK documents
    # dropping it from this list as the way to opt out.
    server.middleware = []
    return server


async def _notify_graph_updated(state: AppState) -> None:
    """Tell every session subscribed to the graph resource that it changed.

    As the official server does, this goes out before the tool's own answer.
    """
    for connection, uris in list(state.subscribers.items()):
        if GRAPH_URI in uris:
            # Never raises: a client that has gone just misses the notice, and the
            # caller's write still answers.
            await connection.send_resource_updated(GRAPH_URI)


def initialization_options(server: Server[AppState]) -> InitializationOptions:
    """The capabilities the official server announces: tools and resources, list-changed, subscribe."""
    return server.create_initialization_options(NotificationOptions(tools_changed=True, resources_changed=True))
