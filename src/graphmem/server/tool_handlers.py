"""tools/list and tools/call: the listing in pages, and a call run within its time limit."""

from __future__ import annotations

import logging
import time
from typing import Any, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from graphmem.core.errors import GraphmemError
from graphmem.server.access import identity_of, read_only_refusal
from graphmem.server.notices import send_logs
from graphmem.server.resource_handlers import notify_updated
from graphmem.server.state import AppState
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
        result = await _run_tool(ctx, self._specs.get(params.name), params)
        if state.relay.has_pending():
            await send_logs(ctx)
        return result


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


def _run_within_limit(state: AppState, spec: ToolSpec, arguments: Any, author: str | None) -> ToolOutput:
    """Run a tool where the store's calls run (`AppState.run`), stopped and rolled back past
    the call time limit, its changes recorded as made by `author`; a reusable read may be
    answered from the answers kept."""
    graph = state.tools.graph
    with graph.time_limit(state.call_time_limit if spec.time_limited else 0), graph.authored_by(author):
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
    identity = identity_of(ctx.request)
    read_only = spec.annotations.read_only_hint is True
    refusal = read_only_refusal(identity, spec.name, read_only)
    if refusal is not None:
        return _tool_error(refusal)
    try:
        arguments = spec.arguments.model_validate(params.arguments or {})
    except ValidationError as error:
        return _tool_error(_format_validation_error(spec.name, error))
    started = time.perf_counter()
    author = identity.name if identity is not None else None
    try:
        output = await state.run(_run_within_limit, state, spec, arguments, author, writes=not read_only)
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
        await notify_updated(ctx)
    return _tool_result(output)
