"""prompts/list and prompts/get: the prompts, naming only the tools the server lists."""

from __future__ import annotations

from collections.abc import Collection

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from graphmem.core.errors import GraphmemError
from graphmem.server.prompts import PROMPTS, render_prompt
from graphmem.server.state import AppState

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


class PromptHandlers:
    """The handlers of prompts/list and prompts/get for a server listing these tools."""

    def __init__(self, listed: Collection[str]) -> None:
        self._listed = listed

    async def list_prompts(
        self, ctx: ServerRequestContext[AppState], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """prompts/list: every prompt with its arguments."""
        return _PROMPT_LISTING

    async def get_prompt(
        self, ctx: ServerRequestContext[AppState], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """prompts/get: the prompt's text with its arguments filled in."""
        try:
            text = render_prompt(params.name, params.arguments, self._listed)
        except GraphmemError as error:
            # Not a tool call: a bad name or argument rejects the request itself.
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
        return types.GetPromptResult(
            description=PROMPTS[params.name].description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )
