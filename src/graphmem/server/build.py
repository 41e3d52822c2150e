"""build_server(settings): the MCP server with the tools, resources, prompts and logging.

The handlers live beside this module, one module per family of requests (tool_handlers,
resource_handlers, prompt_handlers, notices); this one opens the memory in the lifespan
and wires them into one server.

It uses the SDK's low-level `Server`, because the official tool listing has to be
reproduced to the letter (schemas, titles, annotations) and because it is the lean
path through the SDK: one dispatch per call, no per-call schema generation. The
store lives in the lifespan; calls reach it one at a time, on a thread of its own (or,
serving one client over stdio, on the event loop itself).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, cast

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus

from graphmem._version import __version__
from graphmem.config import Settings
from graphmem.core.projects import EVERY, Scope
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.secret_policy import Policy
from graphmem.embedding import load_embedder
from graphmem.server import notices, resource_handlers
from graphmem.server.embedding_worker import EmbeddingWorker
from graphmem.server.instructions import build_instructions
from graphmem.server.prompt_handlers import PromptHandlers
from graphmem.server.request_errors import ExplainedErrors
from graphmem.server.state import AppState
from graphmem.server.store_access import StoreAccess
from graphmem.server.tool_handlers import ToolHandlers
from graphmem.storage import Store, open_store
from graphmem.tools import ALL_TOOLS, ToolContext, ToolSpec
from graphmem.tools.resources import GRAPH_URI
from graphmem.tools.toolsets import select_tools

__all__ = ["GRAPH_URI", "AppState", "build_server", "end_listen_streams", "initialization_options"]


def build_server(
    settings: Settings,
    tools: tuple[ToolSpec, ...] | None = None,
    *,
    tools_page_size: int | None = None,
    one_client: bool = False,
    json_answers: bool = False,
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
        json_answers: every answer is one JSON body (`serve --http --json-response`), which
            carries no notices: a caller's own go on its session's stream instead.
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
    listed = tuple(dict.fromkeys(spec.name for spec in tools))
    tool_handlers = ToolHandlers(tools, tools_page_size)
    prompt_handlers = PromptHandlers(listed)
    # Resource updates for protocol 2026-07-28 on, where subscriptions/listen replaces resources/subscribe.
    bus = InMemorySubscriptionBus()
    listen = resource_handlers.Listen(bus)

    @asynccontextmanager
    async def lifespan(_: Server[AppState]) -> AsyncIterator[AppState]:
        nonlocal store
        # The store given is used once: a server run again opens the memory afresh.
        given, store = store, None
        opened = given if given is not None else await anyio.to_thread.run_sync(open_store, settings)
        try:
            graph = KnowledgeGraph(
                opened,
                strict=settings.strict,
                limits=settings.limits,
                # Loaded on first need: a server that starts loads no model before the handshake.
                load_embedder=load_embedder if settings.semantic else None,
            )
            graph.history_days = settings.history_days
            graph.secrets = cast(Policy, settings.secrets)
            state = AppState(
                ToolContext(graph, settings.response_budget, settings.search_budget),
                StoreAccess(opened, inline=one_client),
                scope=EVERY if settings.project is None else Scope(settings.project.id),
                # One client (stdio): its roots may name its folder; a shared server has many.
                roots_pending=one_client and settings.roots_may_choose,
                home=settings.home,
                call_time_limit=settings.call_time_limit,
                bus=bus,
                notices_on_request_streams=not json_answers,
            )
            # Embeds what is waiting (and what clients write) off the request path, on a
            # connection of its own that its thread opens and closes.
            worker = None
            if graph.meaning.enabled:
                connect = partial(open_store, settings, background=True)
                worker = EmbeddingWorker(graph.meaning, connect, last_call=lambda: state.access.last_call)
                # Started by the first tool call: a server only listed, or stopped right away,
                # never loads the model.
                state.start_background = worker.start
            state.relay.attach()
            try:
                yield state
            finally:
                listen.close()
                state.relay.detach()
                if worker is not None:
                    await anyio.to_thread.run_sync(worker.stop)
                await anyio.to_thread.run_sync(state.access.stop)
        finally:
            await anyio.to_thread.run_sync(opened.close)

    server = _Server(
        "graphmem",
        version=__version__,
        instructions=build_instructions(listed, None if settings.project is None else settings.project.name),
        lifespan=lifespan,
        on_list_tools=tool_handlers.list_tools,
        on_call_tool=tool_handlers.call_tool,
        on_list_resources=resource_handlers.list_resources,
        on_list_resource_templates=resource_handlers.list_resource_templates,
        on_read_resource=resource_handlers.read_resource,
        on_subscribe_resource=resource_handlers.subscribe,
        on_unsubscribe_resource=resource_handlers.unsubscribe,
        on_subscriptions_listen=listen,
        on_list_prompts=prompt_handlers.list_prompts,
        on_get_prompt=prompt_handlers.get_prompt,
    )
    # Registered here rather than as `on_set_logging_level`, which warns that the logging
    # capability is deprecated from protocol 2026-07-28 on (SEP-2577): the clients in use
    # today speak the handshake versions, where it is current.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, notices.set_logging_level)
    # The SDK wraps every message in an OpenTelemetry span by default; with no exporter
    # installed it records nothing, yet it costs a sixth of a ping. The SDK documents
    # dropping it from this list as the way to opt out. Ours rewords the SDK's bare refusals.
    server.middleware = [ExplainedErrors()]
    server.listen_streams = listen
    return server


_NOTIFICATIONS = NotificationOptions(tools_changed=True, resources_changed=True)


class _Server(Server[AppState]):
    """The SDK's server, announcing the official list-changed flags whoever starts it.

    The SDK's in-memory client and its HTTP app call `create_initialization_options()`
    with no notification options, which would announce `listChanged: false`; every
    transport should say what stdio says.
    """

    listen_streams: resource_handlers.Listen | None = None
    """The open subscriptions/listen streams, which a server shutting down ends (they never end by themselves)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or _NOTIFICATIONS, experimental_capabilities, extensions
        )


def initialization_options(server: Server[AppState]) -> InitializationOptions:
    """The official server's capabilities (tools and resources, list-changed, subscribe), prompts and logging.

    The prompts never change while the server runs, so they announce no list-changed notices.
    """
    return server.create_initialization_options(_NOTIFICATIONS)


def end_listen_streams(server: Server[AppState]) -> None:
    """End the open subscriptions/listen streams gracefully (a server shutting down: they never end by themselves)."""
    if isinstance(server, _Server) and server.listen_streams is not None:
        server.listen_streams.close()
