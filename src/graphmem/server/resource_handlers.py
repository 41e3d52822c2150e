"""The resources: the whole graph and one entity by name, read and subscribed to.

A client hears of changes in the shape of its protocol revision: up to 2025-11-25 it sends
`resources/subscribe` and the notices come on its connection; from 2026-07-28 on it opens a
`subscriptions/listen` stream naming the resources it watches, and the notices come on that
stream (the SDK's `ListenHandler` keeps the streams; `Listen` tells the graph what they watch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler, ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPError

from graphmem.core.errors import GraphmemError
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server.access import identity_of, project_header_of
from graphmem.server.notices import connection_of, notify, send_logs
from graphmem.server.state import AppState
from graphmem.server.tool_calls import Asked, scope_asked
from graphmem.tools import dump_json
from graphmem.tools.resources import ENTITY_PREFIX, ENTITY_TEMPLATE, GRAPH_URI, entity_document, entity_name

T = TypeVar("T")

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


async def list_resources(
    ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    """resources/list: the whole knowledge graph."""
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
    """resources/templates/list: one entity by name."""
    return types.ListResourceTemplatesResult(resource_templates=[_ENTITY_TEMPLATE])


async def read_resource(
    ctx: ServerRequestContext[AppState], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    """resources/read: the graph, or one entity with its relations."""
    state = ctx.lifespan_context
    uri = str(params.uri)
    try:
        text = await _read_resource_text(state, uri, ctx.request)
    finally:
        # A JSONL memory another process rewrote is read again here, and may warn.
        if state.relay.has_pending():
            await send_logs(ctx)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
    )


async def subscribe(ctx: ServerRequestContext[AppState], params: types.SubscribeRequestParams) -> types.EmptyResult:
    """resources/subscribe: this connection hears when a write changes the resource."""
    state = ctx.lifespan_context
    uri = str(params.uri)
    await _remember_entity_text(state, uri)
    state.subscribers.setdefault(connection_of(ctx.session), set()).add(uri)
    return types.EmptyResult()


class Listen:
    """subscriptions/listen (protocol 2026-07-28 on): one stream of the updates to the resources it names.

    The SDK's `ListenHandler` keeps the stream; this tells `notify_updated` which entity
    resources the open streams watch, as `resources/subscribe` does for the older revisions.
    """

    def __init__(self, bus: SubscriptionBus) -> None:
        self._streams = ListenHandler(bus)

    async def __call__(
        self, ctx: ServerRequestContext[AppState], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        state = ctx.lifespan_context
        uris = [str(uri) for uri in params.notifications.resource_subscriptions or ()]
        for uri in uris:
            await _remember_entity_text(state, uri)
        state.listened.update(uris)
        state.listen_streams += 1
        try:
            return await self._streams(ctx, params)
        finally:
            state.listen_streams -= 1
            state.listened.subtract(uris)
            for uri in uris:
                if state.listened[uri] <= 0:
                    del state.listened[uri]

    def close(self) -> None:
        """End every open stream as the protocol's graceful close (its final answer)."""
        self._streams.close()


async def _remember_entity_text(state: AppState, uri: str) -> None:
    """For an entity's URI: the entity as it is now, so that a later write can tell whether it changed it."""
    name = _entity_name(uri)
    if name is not None and uri not in state.entity_texts:
        state.entity_texts[uri] = await _entity_text(state, name)


async def unsubscribe(ctx: ServerRequestContext[AppState], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    """resources/unsubscribe: this connection stops hearing of the resource."""
    ctx.lifespan_context.subscribers.get(connection_of(ctx.session), set()).discard(str(params.uri))
    return types.EmptyResult()


def _entity_name(uri: str) -> str | None:
    try:
        return entity_name(uri)
    except GraphmemError as error:
        raise MCPError(types.INVALID_PARAMS, str(error)) from None


async def _entity_text(state: AppState, name: str, request: Any = None) -> str | None:
    try:
        return await state.run(_in_request_scope, state, request, entity_document, name, writes=False)
    except GraphmemError as error:
        # A name over the length limit, say: no entity can have it; a project out of reach.
        raise MCPError(types.INVALID_PARAMS, str(error)) from None


def _in_request_scope(state: AppState, request: Any, read: Callable[..., T], *args: Any) -> T:
    """`read(graph, *args)` in the project the request may see, as a tool call would run: the
    server's, or its request's (a header), within its token's reach (graphmem.core.projects)."""
    graph = state.tools.graph
    asked = Asked(identity_of(request), header=project_header_of(request))
    scope = scope_asked(state, asked, writes=False)
    with graph.working_in(scope, None if asked.identity is None else asked.identity.projects):
        return read(graph, *args)


def _whole_graph(graph: KnowledgeGraph) -> str:
    return dump_json(graph.read_graph().to_wire())


async def _read_resource_text(state: AppState, uri: str, request: Any = None) -> str:
    if uri == GRAPH_URI:
        try:
            return await state.run(_in_request_scope, state, request, _whole_graph, writes=False)
        except GraphmemError as error:
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
    name = _entity_name(uri)
    if name is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Resource {uri} not found; call resources/list and resources/templates/list to see the resources.",
        )
    text = await _entity_text(state, name, request)
    if text is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Entity with name {name} not found ({uri}). Names are exact and case-sensitive (an alias "
            "works too); find them with search_nodes, or in the resource memory://knowledge-graph.",
        )
    return text


async def notify_updated(state: AppState, ctx: ServerRequestContext[AppState] | None = None) -> None:
    """Tell every session subscribed to a resource that a write changed it.

    As the official server does, this goes out before the tool's own answer. The graph
    resource changes with every write; an entity's resource when its text changed,
    which costs one read per subscribed entity and write, and nothing without one.

    Args:
        state: the server's state.
        ctx: the request whose call wrote (its own client hears first, on its stream);
            None when the write came from elsewhere (the explorer).
    """
    subscriptions = list(state.subscribers.items())
    watched = {uri for _, uris in subscriptions for uri in uris if uri.startswith(ENTITY_PREFIX)}
    watched |= {uri for uri in state.listened if uri.startswith(ENTITY_PREFIX)}
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
    # The graph's notice first, as the official server sends it; then the entities'.
    in_order = sorted(changed, key=_graph_first)
    for connection, uris in subscriptions:
        for uri in [uri for uri in in_order if uri in uris]:
            notice = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
            await notify(ctx, connection, notice)
    if state.listen_streams:
        # Each stream keeps the URIs it named; the others pass it by.
        for uri in in_order:
            await state.bus.publish(ResourceUpdated(uri))


def _graph_first(uri: str) -> tuple[bool, str]:
    return (uri != GRAPH_URI, uri)
