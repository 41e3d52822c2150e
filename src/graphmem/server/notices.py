"""Notices from the server to its clients: resource updates and the log records they asked for."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import cast

import anyio
import mcp_types as types
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from graphmem.server.client_log import ClientLogRecord, python_level
from graphmem.server.state import AppState


def connection_of(session: ServerSession) -> Connection:
    """The client connection behind a request's session."""
    # The SDK builds a new ServerSession for every request, so a subscription keyed on
    # one would be forgotten as soon as the subscribe request ends; the connection it
    # wraps lives as long as the client does.
    connection: Connection = session._connection
    return connection


_PER_REQUEST = frozenset(MODERN_PROTOCOL_VERSIONS)
"""The protocol revisions where a request asks for log messages itself, in its `_meta`."""

_Notice = types.ResourceUpdatedNotification | types.LoggingMessageNotification


async def notify(ctx: ServerRequestContext[AppState] | None, connection: Connection, notification: _Notice) -> None:
    """Send a notice to a connection; to the caller's own on its request's stream.

    On Streamable HTTP a notice on the connection's own stream (the client's GET) may
    arrive after the answer to the call that caused it; on the request's stream (the
    POST's answer) it arrives first, as it does over stdio and TCP. An answer sent as one
    JSON body has no room for it: then it goes on the connection's own stream. Never raises: a
    client that has gone just misses it. With no request (`ctx` None), every connection
    hears it on its own stream.
    """
    if ctx is not None and connection is connection_of(ctx.session) and ctx.lifespan_context.notices_on_request_streams:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
    elif isinstance(notification, types.ResourceUpdatedNotification):
        await connection.send_resource_updated(notification.params.uri)
    else:
        params = notification.params.model_dump(mode="json", by_alias=True, exclude_none=True)
        await connection.notify(notification.method, params)


async def send_logs(ctx: ServerRequestContext[AppState]) -> None:
    """Send the log records collected so far to each connection whose level they reach,
    and to the request itself when it asked for them in its `_meta` (protocol 2026-07-28 on)."""
    state = ctx.lifespan_context
    records = state.relay.drain()
    for connection, level in list(state.log_levels.items()):
        for record in records:
            if record.levelno >= level:
                await notify(ctx, connection, _log_notice(record))
    asked = _levels_asked_by(ctx)
    if asked:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            for record in records:
                if record.level in asked:
                    await ctx.session.send_notification(_log_notice(record), related_request_id=ctx.request_id)


def _levels_asked_by(ctx: ServerRequestContext[AppState]) -> frozenset[types.LoggingLevel]:
    """The log levels a request of protocol 2026-07-28 on asked for in its `_meta` (none for older
    revisions, whose connections ask once with logging/setLevel)."""
    if ctx.protocol_version not in _PER_REQUEST:
        return frozenset()
    return allowed_log_levels(ctx.protocol_version, ctx.meta)


def _log_notice(record: ClientLogRecord) -> types.LoggingMessageNotification:
    # A notification of our own rather than the SDK's log helpers, which warn that logging
    # is deprecated from protocol 2026-07-28 on; this client asked for it.
    params = types.LoggingMessageNotificationParams(
        level=cast(types.LoggingLevel, record.level), logger=record.logger, data=record.message
    )
    return types.LoggingMessageNotification(params=params)


@asynccontextmanager
async def logs_for_request(ctx: ServerRequestContext[AppState]) -> AsyncIterator[None]:
    """While the request runs, collect the log records its `_meta` asks for (2026-07-28 on, where
    `logging/setLevel` is gone and each request says from what level it wants them)."""
    state = ctx.lifespan_context
    asked = _levels_asked_by(ctx)
    if not asked:
        yield
        return
    level = min(python_level(name) for name in asked)
    state.request_log_levels[level] += 1
    state.collect_logs()
    try:
        yield
    finally:
        state.request_log_levels[level] -= 1
        state.collect_logs()


async def set_logging_level(
    ctx: ServerRequestContext[AppState], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """logging/setLevel: send this connection the log records from that level up."""
    # A level outside MCP's eight never gets here: the SDK checks a spec method's
    # params against the protocol's schema first and answers Invalid params.
    state = ctx.lifespan_context
    state.log_levels[connection_of(ctx.session)] = python_level(params.level)
    state.collect_logs()
    return types.EmptyResult()
