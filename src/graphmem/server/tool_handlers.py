"""tools/list and tools/call: the listing in pages, and a call run within its time limit."""

from __future__ import annotations

import logging
import time
from typing import Any, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from graphmem.server.access import identity_of, project_header_of
from graphmem.server.notices import logs_for_request, send_logs
from graphmem.server.resource_handlers import notify_updated
from graphmem.server.roots import project_from_roots
from graphmem.server.state import AppState
from graphmem.server.tool_calls import Refusal, run_tool_call
from graphmem.tools import ToolOutput, ToolSpec

# The name MCP clients see on logging notifications; it stayed when the module moved into a package.
logger = logging.getLogger("graphmem.server")


class ToolHandlers:
    """The handlers of tools/list and tools/call for one set of tools."""

    def __init__(self, tools: tuple[ToolSpec, ...], page_size: int | None) -> None:
        self._specs = {spec.name: spec for spec in tools}
        self._page_wires = {
            cursor: page.model_dump(by_alias=True, mode="json", exclude_none=True)
            for cursor, page in _pages([spec.listing() for spec in tools], page_size).items()
        }

    async def list_tools(
        self, ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """tools/list: the page of the listing the cursor names."""
        cursor = params.cursor if params is not None else None
        page = self._page_wires.get(cursor)
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
        self, ctx: ServerRequestContext[AppState], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """tools/call: the tool's answer, or a tool error saying what to send instead."""
        state = ctx.lifespan_context
        async with logs_for_request(ctx):
            result = await _run_tool(ctx, self._specs.get(params.name), params)
        if state.relay.has_pending():
            await send_logs(ctx)
        return result


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
    # `resultType` is required from protocol 2026-07-28 on; the SDK drops it from the
    # answer on the older revisions, whose schema has no such field.
    wire: dict[str, Any] = {"content": content, "isError": output.is_error, "resultType": "complete"}
    if output.structured is not None:
        wire["structuredContent"] = output.structured
    return cast(types.CallToolResult, wire)


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
    if state.roots_pending:
        state.roots_pending = False
        await project_from_roots(state, ctx)
    started = time.perf_counter()
    output = await run_tool_call(
        state, spec, params.arguments, identity_of(ctx.request), project_header_of(ctx.request)
    )
    if isinstance(output, Refusal):
        return _tool_error(output.message)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s answered in %.2f ms", spec.name, (time.perf_counter() - started) * 1000)
    if output.changed:
        await notify_updated(state, ctx)
    return _tool_result(output)
