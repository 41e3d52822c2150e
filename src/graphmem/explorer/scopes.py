"""Which projects an explorer request sees, and which projects its page may offer.

A request names its project the way a tool call does (graphmem.core.projects): the `project`
query parameter (what the page's selector chose: a project's name or key, "shared", or "*"),
else the `X-Graphmem-Project` header, else its token's first project, else the server's.
`projects.scope_of_call` decides; this module only tells its two refusals apart, because the
page must word them differently: a project the memory does not hold is a mistake in the
address (400), one the token may not reach is a matter for the server's operator (403).

Resolving a project's name reads every project's counts, and the page names its project on every
request: `ProjectsKept` keeps the answers while the memory is unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from starlette.requests import Request

from graphmem.core.errors import InvalidInputError
from graphmem.core.identity import Identity
from graphmem.core.projects import ALL_PROJECTS, EVERY, SHARED, SHARED_NAME, Scope, project_name
from graphmem.domain import projects
from graphmem.domain.graph import KnowledgeGraph
from graphmem.server.access import identity_of, project_header_of
from graphmem.server.tool_calls import Asked
from graphmem.storage.base import ProjectCounts

__all__ = [
    "KEPT_SCOPES",
    "PROJECT_PARAMETER",
    "OutOfReachError",
    "ProjectsKept",
    "argument_naming",
    "asked_of",
    "choices",
    "scope_asked",
    "target_scope",
]

PROJECT_PARAMETER = "project"
"""The query parameter every explorer route takes to name its project."""
KEPT_SCOPES = 256
"""The most ways of asking (parameter, header, token) whose scope is kept at once."""


class OutOfReachError(Exception):
    """The request's token may not reach the project it names (or may not write there): 403."""


def asked_of(request: Request) -> Asked:
    """Who asks and for which project: the `project` parameter, the header; an empty one is none."""
    named = (request.query_params.get(PROJECT_PARAMETER) or "").strip() or None
    return Asked(identity_of(request), named, project_header_of(request))


def scope_asked(graph: KnowledgeGraph, default: Scope, asked: Asked, *, writes: bool) -> Scope:
    """The scope a request runs in, `default` being the server's (run where the store's calls run).

    A project named by the parameter must exist, for an edit too: the page offers only those,
    and a typo must not make a new project. One named by the header may be new, as for a tool call.

    Raises:
        InvalidInputError: the request names a project the memory does not hold (or a name
            several projects share).
        OutOfReachError: the token may not reach that project, or may not write to the shared
            space alone.
    """
    reach = None if asked.identity is None else asked.identity.projects
    # scope_named compares with the graph's own project: the server's, even before it holds anything.
    with graph.working_in(default):
        # First without the token's limits: the domain raises InvalidInputError for an unknown
        # project and for one out of reach alike, and only this order tells which it was.
        scope = projects.scope_of_call(
            graph, default, argument=asked.argument, header=asked.header, reach=None, writes=False
        )
        if reach is None:
            return scope
        try:
            return projects.scope_of_call(
                graph, default, argument=asked.argument, header=asked.header, reach=reach, writes=writes
            )
        except InvalidInputError as refused:
            raise OutOfReachError(_sentence(refused.problem)) from None


def target_scope(graph: KnowledgeGraph, default: Scope, identity: Identity | None, target: str) -> Scope:
    """The project a move sends entities to (its name, key or "shared"), as the scope that shows
    them there afterwards. Run where the store's calls run.

    A token limited to projects moves entities only into those: the tool itself would move them
    anywhere, out of the token's own reach, and into the shared space, which it may not write alone.

    Raises:
        InvalidInputError: `target` is no project entities may move to ("*", or too long).
        OutOfReachError: the token may not write to that project.
    """
    with graph.working_in(default):
        key = projects.target_named(graph, target)
        if identity is not None and identity.projects is not None:
            try:
                projects.scope_of_call(
                    graph,
                    default,
                    argument=None,
                    header=argument_naming(Scope(key)),
                    reach=identity.projects,
                    writes=True,
                )
            except InvalidInputError as refused:
                raise OutOfReachError(_sentence(refused.problem)) from None
    return Scope(key)


def _sentence(problem: str) -> str:
    """The domain's problem (written to follow "Invalid argument project:") as a sentence of its own."""
    return problem[:1].upper() + problem[1:]


def argument_naming(scope: Scope) -> str:
    """The `project` argument of a tool call that runs in `scope`, however the request named it."""
    if scope.project is None:
        return ALL_PROJECTS
    return SHARED_NAME if scope.project == SHARED else scope.project


class ProjectsKept:
    """What the memory's projects answer, kept while the memory is unchanged: the scope each way
    of asking resolves to, and the projects the memory holds with their counts.

    Both read every project's counts (`project_counts`; on SQLite a count of every observation,
    130 ms at 200,000 entities), which the page would otherwise pay on every request; the
    memory's version, which any writer's commit moves, is one row. Used where the store's calls
    run, one at a time, so nothing here needs a lock. A refusal is not kept: it is rare.
    """

    def __init__(self) -> None:
        self._version: Hashable | None = None
        self._scopes: dict[tuple[Any, ...], Scope] = {}
        self._held: list[ProjectCounts] | None = None

    def _fresh(self, graph: KnowledgeGraph) -> bool:
        """Whether what is kept may be used and kept: forgotten when the memory has changed since,
        and never kept when the store cannot tell."""
        version = graph.store.version()
        if version is None or version != self._version:
            self._version = version
            self._scopes.clear()
            self._held = None
        return version is not None

    def scope(self, graph: KnowledgeGraph, default: Scope, asked: Asked, *, writes: bool) -> Scope:
        """`scope_asked`, kept."""
        reach = None if asked.identity is None else asked.identity.projects
        key = (default, asked.argument, asked.header, reach, writes)
        # The version is read first: a write in between makes the next version differ, never the reverse.
        fresh = self._fresh(graph)
        if fresh and key in self._scopes:
            return self._scopes[key]
        scope = scope_asked(graph, default, asked, writes=writes)
        if fresh and len(self._scopes) < KEPT_SCOPES:
            self._scopes[key] = scope
        return scope

    def held(self, graph: KnowledgeGraph) -> list[ProjectCounts]:
        """Every project the memory holds, with its counts (`projects.list_projects`), kept."""
        fresh = self._fresh(graph)
        if fresh and self._held is not None:
            return self._held
        with graph.working_in(EVERY):
            held = projects.list_projects(graph)
        if fresh:
            self._held = held
        return held


def choices(held: list[ProjectCounts], current: Scope, identity: Identity | None) -> list[dict[str, Any]]:
    """The projects the page's selector offers: those of `held` that the token may reach (the
    shared space first), each `{name, key, entities}`, and the current one even while it holds
    nothing yet."""
    reach = None if identity is None else identity.projects
    allowed = None if reach is None else _keys_of(reach, [counts.project for counts in held])
    listed = [
        {"name": project_name(counts.project), "key": counts.project, "entities": counts.entities}
        for counts in held
        if allowed is None or counts.project == SHARED or counts.project in allowed
    ]
    if current.project is not None and current.project not in {item["key"] for item in listed}:
        listed.append({"name": project_name(current.project), "key": current.project, "entities": 0})
    return listed


def _keys_of(reach: tuple[str, ...], keys: list[str]) -> set[str]:
    """The keys a token's projects stand for: exactly the keys its tokens file lists (a short
    name is no key: it could stand for another person's project that happens to share it)."""
    del keys
    return set(reach)
