"""build_server(settings): the MCP server with the tools, resources, prompts and logging.

It uses the SDK's low-level `Server`, because the official tool listing has to be
reproduced to the letter (schemas, titles, annotations) and because it is the lean
path through the SDK: one dispatch per call, no per-call schema generation. The
store lives in the lifespan; calls reach it one at a time, on a thread of its own (or,
serving one client over stdio, on the event loop itself).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

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
from graphmem.core.errors import GraphmemError
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server.client_log import LogRelay, python_level
from graphmem.server.instructions import build_instructions
from graphmem.server.prompts import PROMPTS, render_prompt
from graphmem.server.request_errors import ExplainedErrors
from graphmem.server.store_access import StoreAccess
from graphmem.storage import Store, open_store
from graphmem.tools import ALL_TOOLS, ToolContext, ToolOutput, ToolSpec, dump_json
from graphmem.tools.answers import AnswerCache
from graphmem.tools.resources import ENTITY_PREFIX, ENTITY_TEMPLATE, GRAPH_URI, entity_document, entity_name
from graphmem.tools.toolsets import select_tools

__all__ = ["GRAPH_URI", "AppState", "build_server", "initialization_options"]

# The name MCP clients see on logging notifications; it stayed when the module moved into a package.
logger = logging.getLogger("graphmem.server")

T = TypeVar("T")


@dataclass
class AppState:
    """What the server holds while it runs: the graph and who subscribed to what."""

    tools: ToolContext
    access: StoreAccess
    """How calls reach the store: one at a time, waiting for other processes' locks between attempts."""
    subscribers: weakref.WeakKeyDictionary[Connection, set[str]] = field(default_factory=weakref.WeakKeyDictionary)
    """The resource URIs each client connection subscribed to."""
    entity_texts: dict[str, str | None] = field(default_factory=dict)
    """The last text of each subscribed entity resource, to tell whether a write changed it."""
    log_levels: weakref.WeakKeyDictionary[Connection, int] = field(default_factory=weakref.WeakKeyDictionary)
    """The Python level from which each connection that sent logging/setLevel gets log messages."""
    relay: LogRelay = field(default_factory=LogRelay)
    call_time_limit: float = 0.0
    """Seconds a tool call may run before the store stops it and rolls it back; 0: no limit."""
    answers: AnswerCache = field(default_factory=AnswerCache)
    """The answers of reusable read tools, kept while the memory is unchanged."""

    async def run(self, fn: Callable[..., T], *args: Any, writes: bool = True) -> T:
        """Run blocking graph code where the store's calls run (see `StoreAccess.run`)."""
        return await self.access.run(fn, *args, writes=writes)


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
    """The answer in its wire form.

    A handler may return the wire dict instead of the model (the SDK's `HandlerResult`
    takes both) and the SDK validates it once on the way out either way. Building the
    model first would make pydantic walk a large answer (a read of hundreds of
    entities) twice more: a fifth of a millisecond per 50 KB.
    """
    content = [{"type": "text", "text": output.text}]
    content += [{"type": "text", "text": note} for note in output.notes]
    wire: dict[str, Any] = {"content": content, "isError": output.is_error}
    if output.structured is not None:
        wire["structuredContent"] = output.structured
    return cast(types.CallToolResult, wire)


def build_server(
    settings: Settings,
    tools: tuple[ToolSpec, ...] | None = None,
    *,
    tools_page_size: int | None = None,
    one_client: bool = False,
    store: Store | None = None,
) -> Server[AppState]:
    """The MCP server for one memory, ready for any transport.

    Args:
        settings: the memory and how to serve it.
        tools: the tools to list; by default those the settings' toolset (or tool list) chooses.
        tools_page_size: list the tools in pages of this many (each page's `nextCursor`
            leads to the next); by default all of them in one page, which every client reads.
        one_client: the server answers one client, whose calls come one at a time anyway
            (stdio): each runs on the event loop itself. Handing it to the store's thread and
            back costs a tenth of a millisecond, a tenth of a small write; it only pays when
            other clients' calls could be served meanwhile. A call still stops at the time limit.
        store: the memory, already opened (and checked) by the caller; the server closes it
            when it stops. By default the server opens the memory the settings name as it starts.

    Raises:
        ConfigError: the settings name a toolset or tool that does not exist.
        ValueError: `tools_page_size` is below 1.
    """
    if tools is None:
        tools = select_tools(ALL_TOOLS, settings.toolset, settings.tools)
    if tools_page_size is not None and tools_page_size < 1:
        raise ValueError(f"tools_page_size must be at least 1, not {tools_page_size}")
    specs = {spec.name: spec for spec in tools}
    listed = tuple(specs)
    tool_page_wires = {
        cursor: page.model_dump(by_alias=True, mode="json", exclude_none=True)
        for cursor, page in _pages([spec.listing() for spec in tools], tools_page_size).items()
    }

    @asynccontextmanager
    async def lifespan(_: Server[AppState]) -> AsyncIterator[AppState]:
        nonlocal store
        # The store given is used once: a server run again opens the memory afresh.
        given, store = store, None
        opened = given if given is not None else await anyio.to_thread.run_sync(open_store, settings)
        try:
            graph = KnowledgeGraph(opened, strict=settings.strict, limits=settings.limits)
            state = AppState(
                ToolContext(graph, settings.response_budget, settings.search_budget),
                StoreAccess(opened, inline=one_client),
                call_time_limit=settings.call_time_limit,
            )
            state.relay.attach()
            try:
                yield state
            finally:
                state.relay.detach()
                await anyio.to_thread.run_sync(state.access.stop)
        finally:
            await anyio.to_thread.run_sync(opened.close)

    async def list_tools(
        ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        page = tool_page_wires.get(cursor)
        if page is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Invalid cursor {cursor!r}: this server's tools/list never gave it; "
                "call tools/list without a cursor to start again.",
            )
        # The wire form, dumped once: the SDK validates a returned dict once on the way
        # out, where a model would be dumped on every call first (20 schemas).
        return cast(types.ListToolsResult, page)

    async def call_tool(
        ctx: ServerRequestContext[AppState], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        state = ctx.lifespan_context
        result = await _run_tool(ctx, specs.get(params.name), params)
        if state.relay.has_pending():
            await _send_logs(ctx)
        return result

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
        return types.ListResourceTemplatesResult(resource_templates=[_ENTITY_TEMPLATE])

    async def read_resource(
        ctx: ServerRequestContext[AppState], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        state = ctx.lifespan_context
        uri = str(params.uri)
        try:
            text = await _read_resource_text(state, uri)
        finally:
            # A JSONL memory another process rewrote is read again here, and may warn.
            if state.relay.has_pending():
                await _send_logs(ctx)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    async def subscribe(ctx: ServerRequestContext[AppState], params: types.SubscribeRequestParams) -> types.EmptyResult:
        state = ctx.lifespan_context
        uri = str(params.uri)
        name = _entity_name(uri)
        if name is not None and uri not in state.entity_texts:
            # The entity as it is now, so that a later write can tell whether it changed it.
            state.entity_texts[uri] = await _entity_text(state, name)
        state.subscribers.setdefault(_connection_of(ctx.session), set()).add(uri)
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[AppState], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        ctx.lifespan_context.subscribers.get(_connection_of(ctx.session), set()).discard(str(params.uri))
        return types.EmptyResult()

    async def list_prompts(
        ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return _PROMPT_LISTING

    async def get_prompt(
        ctx: ServerRequestContext[AppState], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        try:
            text = render_prompt(params.name, params.arguments, listed)
        except GraphmemError as error:
            # Not a tool call: a bad name or argument rejects the request itself.
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
        return types.GetPromptResult(
            description=PROMPTS[params.name].description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    async def set_logging_level(
        ctx: ServerRequestContext[AppState], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        # A level outside MCP's eight never gets here: the SDK checks a spec method's
        # params against the protocol's schema first and answers Invalid params.
        state = ctx.lifespan_context
        state.log_levels[_connection_of(ctx.session)] = python_level(params.level)
        state.relay.listen_from(min(state.log_levels.values()))
        return types.EmptyResult()

    server = _Server(
        "graphmem",
        version=__version__,
        instructions=build_instructions(listed),
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    # Registered here rather than as `on_set_logging_level`, which warns that the logging
    # capability is deprecated from protocol 2026-07-28 on (SEP-2577): the clients in use
    # today speak the handshake versions, where it is current.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_logging_level)
    # The SDK wraps every message in an OpenTelemetry span by default; with no exporter
    # installed it records nothing, yet it costs a sixth of a ping. The SDK documents
    # dropping it from this list as the way to opt out. Ours rewords the SDK's bare refusals.
    server.middleware = [ExplainedErrors()]
    return server


_NOTIFICATIONS = NotificationOptions(tools_changed=True, resources_changed=True)


class _Server(Server[AppState]):
    """The SDK's server, announcing the official list-changed flags whoever starts it.

    The SDK's in-memory client and its HTTP app call `create_initialization_options()`
    with no notification options, which would announce `listChanged: false`; every
    transport should say what stdio says.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or _NOTIFICATIONS, experimental_capabilities, extensions
        )


_ENTITY_TEMPLATE = types.ResourceTemplate(
    uri_template=ENTITY_TEMPLATE,
    name="entity",
    title="Entity",
    description=(
        "One entity with its observations and every relation touching it. {name} is the entity's "
        "name or one of its aliases, URL-encoded (an entity named 'a/b c' is memory://entity/a%2Fb%20c)."
    ),
    mime_type="application/json",
)

_PROMPT_LISTING = types.ListPromptsResult(
    prompts=[
        types.Prompt(
            name=prompt.name,
            title=prompt.title,
            description=prompt.description,
            arguments=[
                types.PromptArgument(name=argument.name, description=argument.description, required=argument.required)
                for argument in prompt.arguments
            ]
            or None,
        )
        for prompt in PROMPTS.values()
    ]
)


def _pages(tools: list[types.Tool], size: int | None) -> dict[str | None, types.ListToolsResult]:
    """The tools/list answers by cursor: None for the first page, then the cursor each page gives."""
    if size is None or size >= len(tools):
        return {None: types.ListToolsResult(tools=tools)}
    pages: dict[str | None, types.ListToolsResult] = {}
    for start in range(0, len(tools), size):
        # A cursor is the offset of the page it leads to: the same for every connection
        # and every run with the same tools, so a client may page across a reconnect.
        end = start + size
        pages[str(start) if start else None] = types.ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None
        )
    return pages


def _run_within_limit(state: AppState, spec: ToolSpec, arguments: Any) -> ToolOutput:
    """Run a tool where the store's calls run (`AppState.run`), stopped and rolled back past
    the call time limit; a reusable read may be answered from the answers kept."""
    with state.tools.graph.time_limit(state.call_time_limit if spec.time_limited else 0):
        return state.answers.run(spec, state.tools, arguments)


async def _run_tool(
    ctx: ServerRequestContext[AppState], spec: ToolSpec | None, params: types.CallToolRequestParams
) -> types.CallToolResult:
    state = ctx.lifespan_context
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
    started = time.perf_counter()
    try:
        output = await state.run(_run_within_limit, state, spec, arguments, writes=not spec.annotations.read_only_hint)
    except GraphmemError as error:
        return _tool_error(str(error))
    except Exception as error:
        # The top-level handler: a bug must not take the connection down. The store
        # rolled the transaction back, so the message can promise that.
        logger.exception("tool %s failed", spec.name)
        return _tool_error(
            f"graphmem failed unexpectedly ({type(error).__name__}: {error}); nothing was changed. Please report this."
        )
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s answered in %.2f ms", spec.name, (time.perf_counter() - started) * 1000)
    if output.changed:
        await _notify_updated(ctx)
    return _tool_result(output)


def _entity_name(uri: str) -> str | None:
    try:
        return entity_name(uri)
    except GraphmemError as error:
        raise MCPError(types.INVALID_PARAMS, str(error)) from None


async def _entity_text(state: AppState, name: str) -> str | None:
    try:
        return await state.run(entity_document, state.tools.graph, name, writes=False)
    except GraphmemError as error:
        # A name over the length limit, say: no entity can have it.
        raise MCPError(types.INVALID_PARAMS, str(error)) from None


async def _read_resource_text(state: AppState, uri: str) -> str:
    if uri == GRAPH_URI:
        graph = await state.run(state.tools.graph.read_graph, writes=False)
        return dump_json(graph.to_wire())
    name = _entity_name(uri)
    if name is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Resource {uri} not found; call resources/list and resources/templates/list to see the resources.",
        )
    text = await _entity_text(state, name)
    if text is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Entity with name {name} not found ({uri}). Names are exact and case-sensitive (an alias "
            "works too); find them with search_nodes, or in the resource memory://knowledge-graph.",
        )
    return text


_Notice = types.ResourceUpdatedNotification | types.LoggingMessageNotification


async def _notify(ctx: ServerRequestContext[AppState], connection: Connection, notification: _Notice) -> None:
    """Send a notice to a connection; to the caller's own on its request's stream.

    On Streamable HTTP a notice on the connection's own stream (the client's GET) may
    arrive after the answer to the call that caused it; on the request's stream (the
    POST's answer) it arrives first, as it does over stdio and TCP. Never raises: a
    client that has gone just misses it.
    """
    if connection is _connection_of(ctx.session):
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
    elif isinstance(notification, types.ResourceUpdatedNotification):
        await connection.send_resource_updated(notification.params.uri)
    else:
        params = notification.params.model_dump(mode="json", by_alias=True, exclude_none=True)
        await connection.notify(notification.method, params)


async def _notify_updated(ctx: ServerRequestContext[AppState]) -> None:
    """Tell every session subscribed to a resource that a write changed it.

    As the official server does, this goes out before the tool's own answer. The graph
    resource changes with every write; an entity's resource when its text changed,
    which costs one read per subscribed entity and write, and nothing without one.
    """
    state = ctx.lifespan_context
    subscriptions = list(state.subscribers.items())
    watched = {uri for _, uris in subscriptions for uri in uris if uri.startswith(ENTITY_PREFIX)}
    for uri in [uri for uri in state.entity_texts if uri not in watched]:
        del state.entity_texts[uri]
    changed = {GRAPH_URI}
    for uri in sorted(watched):
        name = entity_name(uri)
        if name is None:  # pragma: no cover - watched holds entity URIs only
            continue
        try:
            text = await state.run(entity_document, state.tools.graph, name, writes=False)
        except GraphmemError:
            continue  # subscribe() refused such a name; nothing to compare
        if text != state.entity_texts.get(uri):
            state.entity_texts[uri] = text
            changed.add(uri)
    for connection, uris in subscriptions:
        # The graph's notice first, as the official server sends it; then the entities'.
        for uri in sorted(uris & changed, key=lambda uri: (uri != GRAPH_URI, uri)):
            notice = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
            await _notify(ctx, connection, notice)


async def _send_logs(ctx: ServerRequestContext[AppState]) -> None:
    """Send the log records collected so far to each connection whose level they reach."""
    state = ctx.lifespan_context
    records = state.relay.drain()
    for connection, level in list(state.log_levels.items()):
        for record in records:
            if record.levelno >= level:
                # A notification of our own rather than the SDK's log helpers, which warn
                # that logging is deprecated from protocol 2026-07-28 on; this client asked for it.
                params = types.LoggingMessageNotificationParams(
                    level=cast(types.LoggingLevel, record.level), logger=record.logger, data=record.message
                )
                await _notify(ctx, connection, types.LoggingMessageNotification(params=params))


def initialization_options(server: Server[AppState]) -> InitializationOptions:
    """The official server's capabilities (tools and resources, list-changed, subscribe), prompts and logging.

    The prompts never change while the server runs, so they announce no list-changed notices.
    """
    return server.create_initialization_options(_NOTIFICATIONS)
