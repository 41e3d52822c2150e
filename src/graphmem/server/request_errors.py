"""Refusals of requests the server cannot serve, worded to say what was wrong and what to send.

The SDK refuses a request that comes before `initialize`, and any request whose
params do not fit the method (a `tools/call` without params, `arguments` that is not
an object), with the same bare `-32602 Invalid request parameters`. A client, or the
person reading its log, cannot tell from that what to fix. `ExplainedErrors` is a
server middleware that replaces the message, and for a request before `initialize`
the code too (-32600 Invalid request: its params are not what is wrong).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

__all__ = ["ExplainedErrors", "invalid_params_message"]

_BARE = "Invalid request parameters"

# What the params of the methods clients send most look like, for the advice.
_EXAMPLES = {
    "tools/call": '{"name": "read_graph", "arguments": {}}',
    "resources/read": '{"uri": "memory://knowledge-graph"}',
    "resources/subscribe": '{"uri": "memory://knowledge-graph"}',
    "resources/unsubscribe": '{"uri": "memory://knowledge-graph"}',
    "prompts/get": '{"name": "memory-usage"}',
    "logging/setLevel": '{"level": "info"}',
}


def _advice(method: str) -> str:
    example = _EXAMPLES.get(method)
    return f"Send params such as {example}." if example else "See the MCP schema of this method."


def _where(location: tuple[Any, ...]) -> str:
    path = "params"
    # The SDK validates the whole request, so its paths may start at params itself.
    for part in location[1:] if location[:1] == ("params",) else location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _problems(error: ValidationError) -> str:
    described = []
    for issue in error.errors(include_url=False)[:5]:
        message = issue["msg"]
        if issue["type"] == "missing":
            message = "missing"
        elif issue["type"] in ("dict_type", "model_type"):
            message = "must be an object"
        described.append(f"{_where(issue['loc'])} {message}")
    return "; ".join(described)


def invalid_params_message(method: str, params: Any, error: ValidationError) -> str:
    """What was wrong with a request's params, where, and what to send instead."""
    problems = "params missing" if params is None else _problems(error)
    return f"Invalid params for {method}: {problems}. {_advice(method)}"


class ExplainedErrors:
    """Server middleware: the SDK's bare refusals, reworded for the client (same JSON-RPC code)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except ValidationError as error:
            raise MCPError(types.INVALID_PARAMS, self._invalid_params(ctx, error)) from None
        except MCPError as error:
            if error.error.code != types.INVALID_PARAMS or error.error.message != _BARE:
                raise
            # The client's params are kept once initialize has been answered.
            if ctx.session.client_params is None:
                raise self._before_initialize(ctx) from None
            raise MCPError(types.INVALID_PARAMS, self._unexplained(ctx)) from None

    @staticmethod
    def _invalid_params(ctx: ServerRequestContext[Any, Any], error: ValidationError) -> str:
        return invalid_params_message(ctx.method, ctx.params, error)

    @staticmethod
    def _before_initialize(ctx: ServerRequestContext[Any, Any]) -> MCPError:
        # Invalid request, not invalid params: nothing in the request itself is wrong, only when it came.
        return MCPError(
            types.INVALID_REQUEST,
            f"Invalid request: {ctx.method} came before initialize. Send initialize first, then the "
            "notifications/initialized notification, then other requests (ping is always answered).",
        )

    @staticmethod
    def _unexplained(ctx: ServerRequestContext[Any, Any]) -> str:
        return f"Invalid params for {ctx.method}. {_advice(ctx.method)}"
