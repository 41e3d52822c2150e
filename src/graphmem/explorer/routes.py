"""The explorer's HTTP routes: its page and files at `/`, its JSON reads and edits under `/api/`.

    GET  /                      the page (no token needed: it holds no memory data)
    GET  /explorer/<file>       its script, style sheet and vendored libraries
    GET  /api/<read>            session, overview, entities, search, entity, neighbours, path
    POST /api/<edit>            facts/add|edit|delete, relations/add|delete, entities/add|rename|merge|move

The routes sit behind the same `RequestGuard` as `/mcp`: Host and Origin are checked on
every path, and the token on every `/api/` path. A read runs where the store's calls run,
within the call time limit; an edit is a tool call (`edits.py`, `server/tool_calls.py`).
Each runs in the project its request names (`?project=`, the header, the token's; `scopes.py`).
Every error is `{"error": message}` with a status that says what kind it is, and changes
nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mimetypes
from collections.abc import Awaitable, Callable, Hashable, Mapping
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from graphmem._version import __version__
from graphmem.core.errors import GraphmemError
from graphmem.core.identity import Identity
from graphmem.core.models import DeleteOutcome
from graphmem.core.projects import Scope, project_name
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.validity import end_lapsed_facts
from graphmem.explorer import scopes, views
from graphmem.explorer.edits import EDITS, Edit
from graphmem.explorer.scopes import OutOfReachError
from graphmem.server import AppState
from graphmem.server.access import identity_of
from graphmem.server.resource_handlers import notify_updated
from graphmem.server.tool_calls import Asked, Refusal, RefusalKind, refusal_kind, run_tool_call
from graphmem.tools import ALL_TOOLS, ToolOutput, ToolSpec

__all__ = ["MAX_EDIT_BYTES", "STATIC_PREFIX", "Explorer"]

logger = logging.getLogger(__name__)

STATIC_PREFIX = "/explorer/"
MAX_EDIT_BYTES = 256 * 1024
"""The largest edit body: a few facts, far below what any correction needs."""
KEPT_OVERVIEWS = 16
"""The projects whose overview is kept at once: a page that switches between a few keeps each."""

_STATUS: dict[RefusalKind, int] = {"read_only": 403, "invalid": 400, "not_found": 404, "busy": 503, "failed": 500}

# The page runs only its own files: no inline script, nothing from elsewhere, never in a frame.
_SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
# Answers about the memory are never kept by the browser or a proxy.
_NO_STORE = {"cache-control": "no-store"}


class _Files:
    """The page's files, read once from the package, each with its type and ETag."""

    def __init__(self) -> None:
        root = resources.files("graphmem.explorer") / "static"
        self.files: dict[str, tuple[bytes, str, str]] = {}
        pending = [(root, "")]
        while pending:
            folder, prefix = pending.pop()
            for item in folder.iterdir():
                if item.is_dir():
                    pending.append((item, f"{prefix}{item.name}/"))
                    continue
                data = item.read_bytes()
                kind = mimetypes.guess_type(item.name)[0] or "application/octet-stream"
                if kind.startswith("text/") or kind == "application/javascript":
                    kind += "; charset=utf-8"
                self.files[prefix + item.name] = (data, kind, '"' + hashlib.sha256(data).hexdigest()[:32] + '"')

    def response(self, request: Request, name: str) -> Response:
        found = self.files.get(name)
        if found is None:
            return _error(404, f"No file {request.url.path} here; the explorer is at /.")
        data, kind, etag = found
        # Revalidated on every visit, so a new graphmem's files are used at once.
        headers = {**_SECURITY_HEADERS, "etag": etag, "cache-control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(data, media_type=kind, headers=headers)


class _Json(JSONResponse):
    """JSON that survives any text a memory holds: a lone surrogate (which an old file may hold,
    and UTF-8 cannot encode) is written as a JSON escape, which every browser reads."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _error(status: int, message: str) -> JSONResponse:
    return _Json({"error": message}, status_code=status, headers={**_SECURITY_HEADERS, **_NO_STORE})


def _answer(body: Mapping[str, Any]) -> JSONResponse:
    return _Json(dict(body), headers={**_SECURITY_HEADERS, **_NO_STORE})


def _whole_number(request: Request, key: str, default: int) -> int:
    value = request.query_params.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise _BadRequest(f"{key} is {value!r}; give a whole number.") from None


def _required(request: Request, key: str) -> str:
    value = request.query_params.get(key)
    if not value:
        raise _BadRequest(f"{key} is missing; add ?{key}=... to the address.")
    return value


class _BadRequest(Exception):
    """A request the explorer cannot read: answered 400 with the message."""


async def _json_body(request: Request) -> Mapping[str, Any]:
    """The request's JSON object, read up to `MAX_EDIT_BYTES`."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise _BadRequest("Send the edit as JSON, with Content-Type: application/json.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_EDIT_BYTES:
            raise _TooLarge()
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _BadRequest("The body is not valid JSON; send one JSON object.") from None
    except RecursionError:
        raise _BadRequest("The body nests too deeply; send one flat JSON object.") from None
    if not isinstance(parsed, dict):
        raise _BadRequest("The body must be one JSON object.")
    return parsed


class _TooLarge(Exception):
    """A body past `MAX_EDIT_BYTES`: answered 413."""


class Explorer:
    """The explorer's routes over the state of the server the HTTP transport runs.

    Args:
        state_of: the running server's state, or None before it has started.
    """

    def __init__(self, state_of: Callable[[], AppState | None]) -> None:
        self._state_of = state_of
        self._files = _Files()
        self._tools: dict[str, ToolSpec] = {spec.name: spec for spec in ALL_TOOLS}
        self._overviews_kept: dict[str | None, tuple[Hashable, Mapping[str, Any]]] = {}
        self._projects_kept = scopes.ProjectsKept()
        self._reads: dict[str, Callable[[Request, AppState], Awaitable[Mapping[str, Any]]]] = {
            "session": self._session,
            "overview": self._overview,
            "entities": self._entities,
            "search": self._search,
            "entity": self._entity,
            "neighbours": self._neighbours,
            "path": self._path,
            "changes": self._changes,
            "duplicates": self._duplicates,
        }

    def open_paths(self) -> frozenset[str]:
        """The paths of the page and its files: served without a token, since they hold no memory data."""
        return frozenset({"/", *(STATIC_PREFIX + name for name in self._files.files if name != "index.html")})

    def routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [
            Route("/", self._page, methods=["GET", "HEAD"]),
            Route(STATIC_PREFIX + "{name:path}", self._file, methods=["GET", "HEAD"]),
        ]
        routes += [Route(f"/api/{name}", self._read_route(read), methods=["GET"]) for name, read in self._reads.items()]
        routes += [Route(f"/api/{name}", self._edit_route(name), methods=["POST"]) for name in EDITS]
        routes.append(Route("/api/{rest:path}", self._unknown, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]))
        return routes

    async def _unknown(self, request: Request) -> Response:
        rest = request.path_params["rest"]
        if rest in EDITS:
            return _error(405, f"{request.url.path} changes the memory: send it as a POST with a JSON body.")
        if rest in self._reads:
            return _error(405, f"{request.url.path} only reads: send it as a GET.")
        return _error(404, f"No route {request.url.path}; see docs/explorer.md for the explorer's routes.")

    async def _page(self, request: Request) -> Response:
        return self._files.response(request, "index.html")

    async def _file(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name == "index.html":
            return _error(404, "The explorer is at /.")
        return self._files.response(request, name)

    def _state(self) -> AppState:
        state = self._state_of()
        if state is None:
            raise _Unavailable()
        return state

    def _read_route(
        self, read: Callable[[Request, AppState], Awaitable[Mapping[str, Any]]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            try:
                return _answer(await read(request, self._state()))
            except _BadRequest as error:
                return _error(400, str(error))
            except _Unavailable:
                return _error(503, "The memory is still opening; try again in a moment.")
            except OutOfReachError as error:
                return _error(403, str(error))
            except GraphmemError as error:
                return _error(_status_of(error), str(error))

        return route

    async def _run(
        self, state: AppState, asked: Asked, fn: Callable[..., Mapping[str, Any]], *args: Any
    ) -> Mapping[str, Any]:
        """A read, where the store's calls run, within the call time limit, in the project `asked` names.

        Raises:
            InvalidInputError: the request names a project the memory does not hold.
            OutOfReachError: its token may not reach that project.
        """
        graph = state.tools.graph

        def limited() -> Mapping[str, Any]:
            # Facts whose valid time has ended leave the current ones first, as before a tool call.
            end_lapsed_facts(graph)
            scope = self._projects_kept.scope(graph, state.scope, asked, writes=False)
            with graph.time_limit(state.call_time_limit), graph.working_in(scope):
                return fn(graph, *args)

        return await state.run(limited, writes=False)

    async def _session(self, request: Request, state: AppState) -> Mapping[str, Any]:
        identity = identity_of(request)
        where = await self._run(state, scopes.asked_of(request), self._session_reads, identity)
        return {
            "server": "graphmem",
            "version": __version__,
            "canWrite": identity is None or identity.can_write,
            "who": identity.name if identity is not None else None,
            **where,
            "allProjects": identity is None or identity.projects is None,
            "semantic": state.tools.graph.meaning.enabled,
        }

    async def _overview(self, request: Request, state: AppState) -> Mapping[str, Any]:
        return await self._run(state, scopes.asked_of(request), self._kept_overview)

    def _session_reads(self, graph: KnowledgeGraph, identity: Identity | None) -> Mapping[str, Any]:
        """What the session says of the memory, in the request's scope: its counts, the project the
        page is looking at (None: every project), and the projects it may choose from."""
        current = graph.scope.project
        return {
            "counts": views.session_counts(graph),
            "project": None if current is None else project_name(current),
            "projectKey": current,
            "projects": scopes.choices(self._projects_kept.held(graph), graph.scope, identity),
        }

    def _kept_overview(self, graph: KnowledgeGraph) -> Mapping[str, Any]:
        """The overview of the call's scope, kept while the memory stays as it is.

        Every visit asks for it first, and on PostgreSQL it counts every relation's ends (a
        quarter of a second at 40,000 entities); the memory's version, which any writer's
        commit moves, is one row. Reads run one at a time, so the kept answers need no lock.
        """
        project = graph.scope.project
        version = graph.version()
        kept = self._overviews_kept.pop(project, None)
        if version is not None and kept is not None and kept[0] == version:
            self._overviews_kept[project] = kept
            return kept[1]
        answer = views.overview(graph)
        # Read after the version: a write in between makes the next version differ, never the reverse.
        if version is not None:
            self._overviews_kept[project] = (version, answer)
            if len(self._overviews_kept) > KEPT_OVERVIEWS:
                # The one used longest ago: each use puts its project back at the end.
                del self._overviews_kept[next(iter(self._overviews_kept))]
        return answer

    async def _entities(self, request: Request, state: AppState) -> Mapping[str, Any]:
        return await self._run(
            state,
            scopes.asked_of(request),
            views.entities_of_type,
            _required(request, "type"),
            _whole_number(request, "offset", 0),
            _whole_number(request, "limit", 25),
        )

    async def _search(self, request: Request, state: AppState) -> Mapping[str, Any]:
        entity_type = request.query_params.get("type") or None
        return await self._run(
            state,
            scopes.asked_of(request),
            views.search,
            _required(request, "q"),
            entity_type,
            _whole_number(request, "limit", 20),
        )

    async def _entity(self, request: Request, state: AppState) -> Mapping[str, Any]:
        return await self._run(state, scopes.asked_of(request), views.entity_detail, _required(request, "name"))

    async def _neighbours(self, request: Request, state: AppState) -> Mapping[str, Any]:
        return await self._run(
            state,
            scopes.asked_of(request),
            views.neighbours,
            _required(request, "name"),
            request.query_params.get("relationType") or None,
            _whole_number(request, "offset", 0),
            _whole_number(request, "limit", 25),
        )

    async def _path(self, request: Request, state: AppState) -> Mapping[str, Any]:
        return await self._run(
            state, scopes.asked_of(request), views.path_between, _required(request, "from"), _required(request, "to")
        )

    async def _changes(self, request: Request, state: AppState) -> Mapping[str, Any]:
        before = request.query_params.get("before")
        return await self._run(
            state,
            scopes.asked_of(request),
            views.entity_changes,
            request.query_params.get("name") or None,
            request.query_params.get("tool") or None,
            None if before is None else _whole_number(request, "before", 0),
        )

    async def _duplicates(self, request: Request, state: AppState) -> Mapping[str, Any]:
        return await self._run(
            state, scopes.asked_of(request), views.duplicate_pairs, _whole_number(request, "offset", 0)
        )

    def _edit_route(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        edit = EDITS[name]
        spec = self._tools[edit.tool]

        async def route(request: Request) -> Response:
            try:
                state = self._state()
                body = await _json_body(request)
                arguments, shown = edit.arguments(body), edit.shown(body)
            except _BadRequest as error:
                return _error(400, str(error))
            except _TooLarge:
                return _error(413, f"The edit is over {MAX_EDIT_BYTES // 1024} KB; send a smaller one.")
            except _Unavailable:
                return _error(503, "The memory is still opening; try again in a moment.")
            except GraphmemError as error:
                return _error(400, str(error))
            try:
                where, shown_in = await self._edit_scopes(request, state, edit, body)
            except OutOfReachError as error:
                return _error(403, str(error))
            except GraphmemError as error:
                return _error(_status_of(error), str(error))
            # The scope as the tool's own `project` argument: the edit runs where the reads ran.
            arguments["project"] = scopes.argument_naming(where)
            asked_after = Asked(identity_of(request), scopes.argument_naming(shown_in or where))
            return await self._apply(request, state, spec, arguments, shown, asked_after)

        return route

    async def _edit_scopes(
        self, request: Request, state: AppState, edit: Edit, body: Mapping[str, Any]
    ) -> tuple[Scope, Scope | None]:
        """The scope an edit runs in, and for a move the scope of its target, where its entity is
        shown afterwards (None: where it ran).

        Raises:
            InvalidInputError: an unknown project, or a target no entity may move to.
            OutOfReachError: the token may not write in that project, or to that target.
        """
        graph, asked = state.tools.graph, scopes.asked_of(request)
        target = edit.target(body) if edit.target is not None else None

        def resolve() -> tuple[Scope, Scope | None]:
            where = self._projects_kept.scope(graph, state.scope, asked, writes=True)
            if target is None:
                return where, None
            return where, scopes.target_scope(graph, state.scope, asked.identity, target)

        return await state.run(resolve, writes=False)

    async def _apply(
        self,
        request: Request,
        state: AppState,
        spec: ToolSpec,
        arguments: dict[str, Any],
        shown: str,
        asked_after: Asked,
    ) -> Response:
        identity: Identity | None = identity_of(request)
        output = await run_tool_call(state, spec, arguments, identity, via="explorer")
        if isinstance(output, Refusal):
            if output.kind == "read_only":
                # The tool's refusal speaks of tools; a person in the page needs the same in its terms.
                whose = f" ({identity.name})" if identity is not None and identity.name else ""
                return _error(
                    403,
                    f"This token{whose} may only read, so nothing was changed. "
                    "To correct the memory, ask the server's operator for a write token.",
                )
            return _error(_STATUS[output.kind], output.message)
        if output.is_error:
            return _error(400, output.text)
        skipped = _skipped(spec.name, output)
        if skipped is not None:
            return _error(*skipped)
        if output.changed:
            await notify_updated(state)
        try:
            entity: Mapping[str, Any] | None = await self._run(state, asked_after, views.entity_detail, shown)
        except (GraphmemError, OutOfReachError):
            entity = None
        # Notes in sentences (a relation to a name that is no entity yet, say) are worth showing;
        # some tools put their JSON answer there, which a person need not read.
        notes = [note for note in output.notes if not note.lstrip().startswith(("{", "["))]
        return _answer({"message": _done(spec.name, output), "notes": notes, "entity": entity})


class _Unavailable(Exception):
    """The server has not opened the memory yet (or has closed it)."""


def _status_of(error: GraphmemError) -> int:
    return _STATUS[refusal_kind(error)]


def _skipped(tool: str, output: ToolOutput) -> tuple[int, str] | None:
    """The status and message for a call that did nothing, or None when it did what was asked.

    The official tools skip quietly what exists already (a create) or is not there (a
    delete), and say so only in words; a person who asked for something new, or to delete
    what the page showed, must hear that nothing happened.
    """
    structured = output.structured or {}
    if tool in ("create_entities", "create_relations"):
        if structured.get("entities" if tool == "create_entities" else "relations") == []:
            what = "That entity" if tool == "create_entities" else "That relation"
            return 409, f"{what} exists already; nothing was added."
    elif tool == "add_observations":
        results = structured.get("results") or []
        if results and not any(result.get("addedObservations") for result in results):
            return 409, "The entity has that fact already; nothing was added."
    elif tool == "move_entities" and not structured.get("moved"):
        if structured.get("notFound"):
            return 404, f"No entity is named {', '.join(structured['notFound'])} here; nothing was moved."
        return 409, f"That entity is in {structured.get('to')} already; nothing was moved."
    elif output.deleted is not None and output.deleted.deleted == 0:
        if output.deleted.missing_entities:
            return 404, f"No entity is named {', '.join(output.deleted.missing_entities)}; nothing was deleted."
        what = "That fact is" if tool == "delete_observations" else "That relation is"
        return 404, f"{what} not there (deleted already?); nothing was deleted. Reopen the entity to see it as it is."
    return None


def _done(tool: str, output: ToolOutput) -> str:
    deleted: DeleteOutcome | None = output.deleted
    if tool == "move_entities":
        moved = (output.structured or {}).get("relations", 0)
        with_relations = f", with {moved} relation{'' if moved == 1 else 's'}" if moved else ""
        return f"Moved to {(output.structured or {}).get('to')}{with_relations}."
    if deleted is not None and deleted.deleted < deleted.requested:
        noun = "facts" if tool == "delete_observations" else "relations"
        return f"Deleted {deleted.deleted} of {deleted.requested} {noun}; the rest were not there."
    return {
        "add_observations": "Saved.",
        "delete_observations": "Fact deleted.",
        "create_relations": "Relation added.",
        "delete_relations": "Relation deleted.",
        "create_entities": "Entity added.",
        "update_entities": "Renamed; the old name stays as an alias.",
        "merge_entities": "Merged.",
        "undo_changes": "Undone, as a new change (the timeline shows it).",
    }.get(tool, "Done.")
