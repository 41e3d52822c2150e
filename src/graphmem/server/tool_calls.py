"""One tool call, run the same way whoever asks: an MCP client's tools/call or an edit in the explorer.

Both fronts go through `run_tool_call`, so an edit made in the browser is checked, limited,
authored and refused exactly as the same tool called by an agent would be; each front then
words the outcome its own way (a tool result, or an HTTP status and JSON).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from graphmem.core.errors import (
    EntityNotFoundError,
    GraphmemError,
    InvalidInputError,
    RelationNotFoundError,
    StorageBusyError,
    TimeLimitError,
)
from graphmem.core.identity import Identity
from graphmem.core.projects import Scope
from graphmem.domain import projects
from graphmem.domain.as_of import as_of
from graphmem.domain.secret_policy import Redaction, clean_arguments, redaction_note
from graphmem.domain.validity import end_lapsed_facts
from graphmem.server.access import read_only_refusal
from graphmem.server.state import AppState
from graphmem.tools import ToolOutput, ToolSpec

__all__ = [
    "Asked",
    "Refusal",
    "RefusalKind",
    "format_validation_error",
    "refusal_kind",
    "run_tool_call",
    "scope_asked",
]

# The name MCP clients see on logging notifications; it stayed when the module moved into a package.
logger = logging.getLogger("graphmem.server")

RefusalKind = Literal["read_only", "invalid", "not_found", "busy", "failed"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call that changed nothing, and the message that says why and what to do instead."""

    message: str
    kind: RefusalKind


def refusal_kind(error: GraphmemError) -> RefusalKind:
    """What kind of refusal an error of the graph is."""
    if isinstance(error, EntityNotFoundError | RelationNotFoundError):
        return "not_found"
    if isinstance(error, StorageBusyError | TimeLimitError):
        # Neither is the caller's mistake: the same call may succeed in a moment.
        return "busy"
    return "invalid"


def format_validation_error(tool: str, error: ValidationError) -> str:
    """The arguments' problems, each with where it is, and what to do about them."""
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


@dataclass(frozen=True, slots=True)
class Asked:
    """Who asks, and for which project: the call's `project` argument, the request's header."""

    identity: Identity | None
    argument: str | None = None
    header: str | None = None
    via: str | None = None
    """What the change log says the call was made through: the tool's name unless a front names itself."""
    as_of: str | None = None
    """The call's `asOf`: answer as the memory stood at that time (domain/as_of.py)."""
    valid_at: str | None = None
    """The call's `validAt`: show the facts that held at that date (domain/validity.py)."""


def _run_within_limit(state: AppState, spec: ToolSpec, arguments: Any, asked: Asked) -> ToolOutput:
    """Run a tool where the store's calls run (`AppState.run`), stopped and rolled back past
    the call time limit, its changes recorded as made by the caller, in the project the call
    asks for (`projects.scope_of_call`); a reusable read may be answered from the answers kept."""
    graph = state.tools.graph
    identity = asked.identity
    author = identity.name if identity is not None else None
    scope = scope_asked(state, asked, writes=spec.annotations.read_only_hint is not True)
    # Facts whose valid time has ended leave the current ones before the call sees them
    # (a row read at most once a second when none has).
    end_lapsed_facts(graph)
    with (
        graph.time_limit(state.call_time_limit if spec.time_limited else 0),
        graph.authored_by(author),
        graph.through(asked.via or spec.name),
        graph.working_in(scope, None if identity is None else identity.projects),
        # Its arguments were looked at for secrets already (run_tool_call).
        graph.texts_checked(),
    ):
        if asked.as_of is not None or asked.valid_at is not None:
            # Not from the answers kept: those are of the memory as it is.
            return as_of(graph, asked.as_of, lambda: spec.run(state.tools, arguments), valid_at=asked.valid_at)
        return state.answers.run(spec, state.tools, arguments)


LOOK_UPS_ONLY = frozenset(
    {"delete_entities", "delete_observations", "delete_relations", "merge_entities", "move_entities", "undo_changes"}
)
"""Write tools whose texts only name what is stored (to delete, merge or move it): not cleaned
of secrets, or a stored one could never be named to delete it."""


def scope_asked(state: AppState, asked: Asked, *, writes: bool) -> Scope:
    """The project a request runs in (`projects.scope_of_call`), where the store's calls run:
    the server's, or the one it names, within its token's reach."""
    graph = state.tools.graph
    with graph.working_in(state.scope):
        return projects.scope_of_call(
            graph,
            state.scope,
            argument=asked.argument,
            header=asked.header,
            reach=None if asked.identity is None else asked.identity.projects,
            writes=writes,
        )


def _time_argument(name: str, tool: str, arguments: Any, read_only: bool) -> tuple[Any, str | None, Refusal | None]:
    """The call's arguments without `name` (`asOf`, the memory as it stood then, or `validAt`,
    the facts that held then), which any read takes, and its value; one that is not text, or
    on a tool that writes, is refused."""
    if not isinstance(arguments, dict) or name not in arguments:
        return arguments, None, None
    when = arguments[name]
    problem = None
    if not isinstance(when, str):
        problem = f"{name}: is {json.dumps(when)[:40]}, not a text. Give an ISO 8601 date or time, or leave it out."
    elif not read_only:
        problem = f"{name}: is for reads; a write always changes the memory as it is now. Leave it out."
    if problem is not None:
        return (
            arguments,
            None,
            Refusal(f"Input validation error: Invalid arguments for tool {tool}: {problem}", "invalid"),
        )
    return {key: value for key, value in arguments.items() if key != name}, when, None


def _project_argument(tool: str, arguments: Any) -> tuple[Any, str | None, Refusal | None]:
    """The call's arguments without `project`, which any tool takes (the scope of this one call,
    graphmem.core.projects), and its value; a `project` that is not text is refused."""
    if not isinstance(arguments, dict) or "project" not in arguments:
        return arguments, None, None
    project = arguments["project"]
    if not isinstance(project, str):
        refusal = Refusal(
            f"Input validation error: Invalid arguments for tool {tool}: project: is {json.dumps(project)[:40]}, "
            'not a text. Give a project\'s name, "shared", or "*" for every project, or leave it out.',
            "invalid",
        )
        return arguments, None, refusal
    return {key: value for key, value in arguments.items() if key != "project"}, project, None


async def run_tool_call(
    state: AppState,
    spec: ToolSpec,
    arguments: Any,
    identity: Identity | None,
    project_header: str | None = None,
    via: str | None = None,
) -> ToolOutput | Refusal:
    """Run one tool with its wire arguments as `identity` (None: stdio, or a server without tokens),
    in the project its `project` argument, or else `project_header` (HTTP), names; its changes
    logged as made through `via` (the explorer), else through the tool.

    A tool that writes is refused for a read-only token; arguments that do not fit the tool's
    schema, and any `GraphmemError` the call raises, become a `Refusal` naming the problem.
    The caller tells subscribers when the output says the memory `changed`.
    """
    read_only = spec.annotations.read_only_hint is True
    refusal = read_only_refusal(identity, spec.name, read_only)
    if refusal is not None:
        return Refusal(refusal, "read_only")
    arguments, project, refused = _project_argument(spec.name, arguments)
    if refused is not None:
        return refused
    arguments, when, refused = _time_argument("asOf", spec.name, arguments, read_only)
    if refused is not None:
        return refused
    arguments, valid_at, refused = _time_argument("validAt", spec.name, arguments, read_only)
    if refused is not None:
        return refused
    redacted: list[Redaction] = []
    if not read_only and spec.name not in LOOK_UPS_ONLY:
        # Secrets leave a write's texts before the tool reads them (domain/secret_policy.py).
        try:
            arguments, redacted = clean_arguments(arguments, state.tools.graph.secrets)
        except InvalidInputError as error:
            problem = f"{error.field}: {error.problem}"
            return Refusal(f"Input validation error: Invalid arguments for tool {spec.name}: {problem}", "invalid")
    try:
        parsed = spec.arguments.model_validate(arguments or {})
    except ValidationError as error:
        return Refusal(format_validation_error(spec.name, error), "invalid")
    asked = Asked(identity, project, project_header, via, when, valid_at)
    try:
        output = await state.run(_run_within_limit, state, spec, parsed, asked, writes=not read_only)
        if redacted and not output.is_error:
            output = dataclasses.replace(output, notes=(*output.notes, redaction_note(redacted)))
        return output
    except GraphmemError as error:
        return Refusal(str(error), refusal_kind(error))
    except Exception as error:
        # The top-level handler: a bug must not take the connection down. The store
        # rolled the transaction back, so the message can promise that.
        logger.exception("tool %s failed", spec.name)
        return Refusal(
            f"graphmem failed unexpectedly ({type(error).__name__}: {error}); nothing was changed. Please report this.",
            "failed",
        )
