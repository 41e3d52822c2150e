"""The change log's tool: what was written, when, by whom, through what (domain/history.py)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.core.projects import project_name
from graphmem.domain.history import DEFAULT_CHANGES, MOST_CHANGES, ChangeQuery, describe, list_changes
from graphmem.tools import schemas
from graphmem.tools.base import READ, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json

__all__ = ["HISTORY_TOOLS"]


class _ListArgs(ToolArgs):
    since: Omittable[str] = None
    until: Omittable[str] = None
    author: Omittable[str] = None
    tool: Omittable[str] = None
    entity: Omittable[str] = None
    before: Omittable[int] = None
    limit: int = Field(default=DEFAULT_CHANGES)


def list_changes_tool(ctx: ToolContext, args: _ListArgs) -> ToolOutput:
    query = ChangeQuery(args.since, args.until, args.author, args.tool, args.entity, args.before, args.limit)
    page = list_changes(ctx.graph, query)
    listed: list[dict[str, Any]] = []
    for change in page.changes:
        item: dict[str, Any] = {"seq": change.seq, "at": change.at, "by": change.author or "local", "via": change.via}
        if change.project is not None:
            item["project"] = project_name(change.project)
        item["did"] = describe(change)
        listed.append(item)
    structured: dict[str, Any] = {"changes": listed}
    if page.more and page.changes:
        # The next page: the changes before the last one shown.
        structured["before"] = page.changes[-1].seq
    return ToolOutput(structured, dump_json(structured))


HISTORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_changes",
        title="List Changes",
        description=(
            "What was written to this memory, newest first: each change's number, time, author, the tool "
            "that made it and what it did. Filter by time (since/until, ISO 8601), author, tool or entity; "
            "pass `before` from an answer for the next page."
        ),
        input_schema=schemas.arguments(
            {
                "since": {"type": "string"},
                "until": {"type": "string"},
                "author": {"type": "string", "description": 'a token\'s name, or "" for local changes'},
                "tool": {"type": "string"},
                "entity": {"type": "string"},
                "before": {"type": "integer"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MOST_CHANGES},
            }
        ),
        output_schema=schemas.shape({"changes": "array"}, {"before": "integer"}),
        annotations=READ,
        arguments=_ListArgs,
        run=list_changes_tool,
    ),
)
