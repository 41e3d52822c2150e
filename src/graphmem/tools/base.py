"""What every tool is made of: its listing, its argument model, its output, its hints.

Each tool is a `ToolSpec`: its listing (name, title, description, schemas and
annotations), a pydantic model that parses the wire arguments (camelCase, `from`),
and a plain function that calls the graph and shapes the answer. Functions never
catch: `server/tool_handlers.py` turns a `GraphmemError` into a tool error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import mcp_types as types
import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict

from graphmem.core.models import DeleteOutcome, Entity
from graphmem.domain.graph import KnowledgeGraph

__all__ = [
    "DELETE",
    "IDEMPOTENT_WRITE",
    "OFFICIAL_EXECUTION",
    "Omittable",
    "READ",
    "WRITE",
    "ToolArgs",
    "ToolContext",
    "ToolOutput",
    "ToolSpec",
    "dump_json",
    "entity_wire",
    "plural",
]


def dump_json(value: Any) -> str:
    """JSON as the official server writes it: `JSON.stringify(value, null, 2)`, non-ASCII kept.

    orjson writes it in C; the standard library's encoder falls back to pure Python as
    soon as `indent` is set, which made this a third of a read's cost. orjson refuses
    what JSON.stringify would still write (a lone surrogate read from an old file, an
    integer past 64 bits): those take the standard library's path. The two differ only
    in how a float with an exponent is spelled (`1e-7` against `1e-07`, both valid
    JSON for the same number); the official nine never answer with a float.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8")
    except TypeError:
        # orjson.JSONEncodeError is a TypeError.
        return json.dumps(value, indent=2, ensure_ascii=False)


def entity_wire(entity: Entity) -> dict[str, Any]:
    """An entity as the tools beyond the official nine show it: with its aliases and spec 002's
    createdAt, and its updatedAt and version once it has changed.

    An entity never changed would show its creation time twice and version 1: bytes every
    reader pays for and none reads. The official nine keep the official three keys, so their
    answers stay byte-identical.
    """
    wire = entity.to_wire()
    if entity.aliases:
        wire["aliases"] = list(entity.aliases)
    extra = entity.extra or {}
    created, updated, version = extra.get("createdAt"), extra.get("updatedAt"), extra.get("version")
    if isinstance(created, str):
        wire["createdAt"] = created
    changed = isinstance(version, int) and not isinstance(version, bool) and version > 1
    if isinstance(updated, str) and (changed or updated != created):
        wire["updatedAt"] = updated
    if changed:
        wire["version"] = version
    return wire


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool runs against: the graph, and how much text one answer may hold."""

    graph: KnowledgeGraph
    response_budget: int = 0
    """About how many tokens of text one read answer may hold; 0 means unlimited."""
    search_budget: int | None = None
    """The same for a search_nodes call without a limit (a question, not a dump); 0 means
    unlimited, None the response budget."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool answers: the structured result and the text items shown to the model.

    The first text item is always the official one; `notes` follow it as extra items.
    """

    structured: dict[str, Any]
    text: str
    notes: tuple[str, ...] = ()
    changed: bool = False
    """Whether the call wrote to memory (subscribers of the graph resource are told)."""
    is_error: bool = False
    """A refusal the model should fix and retry, with its reasons in `structured`."""
    deleted: DeleteOutcome | None = None
    """A delete's outcome: how much of what it named was there. The official answer says so
    only in words; the explorer needs the numbers. Never sent on the wire."""


T = TypeVar("T")


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null is not allowed; leave the key out instead")
    return value


Omittable = Annotated[T | None, BeforeValidator(_not_null)]
"""An optional argument: None when left out, and refused when sent as null, which its schema
does not allow (a client that sends null would otherwise get the default without knowing)."""


class ToolArgs(BaseModel):
    """The arguments of a tool, parsed from the wire; every tool's model derives from this."""

    # strict: a number where a string belongs is an error, as with the official zod schemas.
    # extra="ignore": unknown keys are dropped, as the official server does.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, populate_by_name=False)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: how it is listed, how its arguments parse, and what it runs."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: types.ToolAnnotations
    arguments: type[ToolArgs]
    run: Callable[[ToolContext, Any], ToolOutput]
    time_limited: bool = True
    """Whether the server's call time limit applies (not to compact, which rewrites the file)."""
    reusable: bool = False
    """Whether the answer depends on the arguments and the memory alone, so that while the
    memory is unchanged an earlier answer to the same arguments may be given again
    (`tools.answers`). Only for reads that record nothing."""
    execution: types.ToolExecution | None = None
    """Listed only where the official server lists it: `forbidden` is what a client assumes
    when it is absent, so elsewhere it would cost bytes and say nothing."""

    def listing(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
            execution=self.execution,
        )


OFFICIAL_EXECUTION = types.ToolExecution(task_support="forbidden")

WRITE = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# A write that repeated changes nothing more (a rename, an upsert, a compaction).
IDEMPOTENT_WRITE = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DELETE = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
READ = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def plural(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural
