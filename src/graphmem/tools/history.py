"""The change log's tool: what was written, when, by whom, through what (domain/history.py)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from graphmem.core.models import Relation
from graphmem.core.projects import project_name
from graphmem.domain.diff import DIFF_ITEMS, MemoryDiff, diff_memory
from graphmem.domain.history import DEFAULT_CHANGES, MOST_CHANGES, ChangeQuery, describe, list_changes
from graphmem.domain.undo import MOST_UNDONE, UndoAsk, undo
from graphmem.tools import schemas
from graphmem.tools.base import READ, WRITE, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json, plural

__all__ = ["HISTORY_TOOLS"]

MOST_SEQ = 2**53 - 1
"""The highest change number the tools take: the largest integer JSON carries exactly."""


class _ListArgs(ToolArgs):
    since: Omittable[str] = None
    until: Omittable[str] = None
    author: Omittable[str] = None
    tool: Omittable[str] = None
    entity: Omittable[str] = None
    before: Omittable[int] = Field(default=None, ge=1, le=MOST_SEQ)
    limit: int = Field(default=DEFAULT_CHANGES, ge=1, le=MOST_CHANGES)


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


class _UndoArgs(ToolArgs):
    changes: list[Annotated[int, Field(ge=1, le=MOST_SEQ)]] = Field(default_factory=list, max_length=MOST_UNDONE)
    since: Omittable[str] = None
    author: Omittable[str] = None
    tool: Omittable[str] = None
    dry_run: bool = Field(default=False, alias="dryRun")


def undo_changes_tool(ctx: ToolContext, args: _UndoArgs) -> ToolOutput:
    outcome = undo(ctx.graph, UndoAsk(tuple(args.changes), args.since, args.author, args.tool, args.dry_run))
    undone = [change.seq for change in outcome.undone]
    # An undo of a thousand changes names them all, but says what they did in a page's worth.
    lines = outcome.lines[:DIFF_ITEMS]
    if len(outcome.lines) > DIFF_ITEMS:
        lines.append(f"and {len(outcome.lines) - DIFF_ITEMS} more (list_changes shows each change)")
    structured: dict[str, Any] = {"undone": undone, "did": lines}
    count = f"{len(undone)} {plural(len(undone), 'change', 'changes')}"
    if outcome.dry_run:
        structured["dryRun"] = True
        summary = f"Would undo {count} ({', '.join(map(str, undone))}); nothing was changed:"
    else:
        summary = f"Undid {count} ({', '.join(map(str, undone))}), as a new change:"
    text = "\n".join([summary, *(f"- {line}" for line in lines)])
    return ToolOutput(structured, text, changed=not outcome.dry_run)


class _DiffArgs(ToolArgs):
    since: str
    until: Omittable[str] = None


def _bounded(items: list[Any]) -> dict[str, Any]:
    listed: dict[str, Any] = {"items": items[:DIFF_ITEMS], "total": len(items)}
    return listed


def _relation_line(relation: Relation) -> str:
    return f"{relation.from_} -{relation.relation_type}-> {relation.to}"


def diff_structured(diff: MemoryDiff) -> dict[str, Any]:
    """A diff as the tool answers it: each list at most `DIFF_ITEMS` long, with its total."""
    changed = []
    for difference in diff.changed:
        item: dict[str, Any] = {"name": difference.name}
        if difference.added:
            item["addedFacts"] = difference.added
        if difference.removed:
            item["removedFacts"] = difference.removed
        if difference.type_before != difference.type_after:
            item["entityType"] = [difference.type_before, difference.type_after]
        changed.append(item)
    return {
        "since": diff.since,
        "until": diff.until,
        "changes": diff.changes,
        "addedEntities": _bounded([entity.name for entity in diff.added]),
        "removedEntities": _bounded([entity.name for entity in diff.removed]),
        "changedEntities": _bounded(changed),
        "addedRelations": _bounded([_relation_line(relation) for relation in diff.related]),
        "removedRelations": _bounded([_relation_line(relation) for relation in diff.unrelated]),
    }


def diff_memory_tool(ctx: ToolContext, args: _DiffArgs) -> ToolOutput:
    structured = diff_structured(diff_memory(ctx.graph, args.since, args.until))
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
                "before": {"type": "integer", "minimum": 1, "maximum": MOST_SEQ},
                "limit": {"type": "integer", "minimum": 1, "maximum": MOST_CHANGES},
            }
        ),
        output_schema=schemas.shape({"changes": "array"}, {"before": "integer"}),
        annotations=READ,
        arguments=_ListArgs,
        run=list_changes_tool,
    ),
    ToolSpec(
        name="undo_changes",
        title="Undo Changes",
        description=(
            "Take back changes of the log (list_changes), as one new change: by number (`changes`), or every "
            "change `since` a time, maybe only an author's or a tool's. Refused, naming it, when a later change "
            "touched what they did. `dryRun` says what it would undo."
        ),
        input_schema=schemas.arguments(
            {
                "changes": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MOST_SEQ}},
                "since": {"type": "string"},
                "author": {"type": "string"},
                "tool": {"type": "string"},
                "dryRun": {"type": "boolean"},
            }
        ),
        output_schema=schemas.shape({"undone": "array", "did": "array"}, {"dryRun": "boolean"}),
        annotations=WRITE,
        arguments=_UndoArgs,
        run=undo_changes_tool,
    ),
    ToolSpec(
        name="diff_memory",
        title="Diff Memory",
        description=(
            "What changed between two times (ISO 8601; `until` defaults to now): entities added, removed "
            "or changed (facts added and removed, type), relations added and removed; 50 of each at most, "
            "with totals."
        ),
        input_schema=schemas.arguments({"since": {"type": "string"}, "until": {"type": "string"}}, ["since"]),
        output_schema=schemas.shape(
            {
                "since": "string",
                "until": "string",
                "changes": "integer",
                "addedEntities": "object",
                "removedEntities": "object",
                "changedEntities": "object",
                "addedRelations": "object",
                "removedRelations": "object",
            }
        ),
        annotations=READ,
        arguments=_DiffArgs,
        run=diff_memory_tool,
    ),
)
