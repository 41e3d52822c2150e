"""The rules of projects that the store cannot know (design/projects-and-time.md).

The store keeps each call to the projects its scope sees; what a write may do across them is
decided here:

- a new entity goes to the scope's home (the project, or the shared space for every project);
- a new relation goes to the scope's project; seen across every project, to the project of an
  endpoint that has one (one that would join two projects is refused);
- seen across every project, a name two projects hold is refused by a write that names it;
- entities move between projects (`move_entities`) with the relations that touch them, unless
  the target already sees one of their names; a shared entity moved into a project takes the
  relations of other projects that name it along only if they are that project's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphmem.core.errors import AmbiguousNameError, InvalidInputError, ProjectConflictError
from graphmem.core.models import Entity
from graphmem.core.projects import ALL_PROJECTS, EVERY, SHARED, SHARED_NAME, Scope, project_name
from graphmem.storage.base import ProjectCounts, Store

if TYPE_CHECKING:
    from graphmem.domain.graph import KnowledgeGraph

MAX_PROJECT_KEY = 300
"""The longest project key a call may give (a remote URL, a path)."""

__all__ = [
    "MovedEntities",
    "delete_project",
    "list_projects",
    "move",
    "move_entities",
    "refuse_ambiguous",
    "refuse_ambiguous_among",
    "refuse_ambiguous_relations",
    "refuse_taken_elsewhere",
    "taken_elsewhere",
    "relation_home",
    "scope_named",
    "scope_of_call",
    "target_named",
]


def scope_of_call(
    graph: KnowledgeGraph,
    default: Scope,
    *,
    argument: str | None,
    header: str | None,
    reach: tuple[str, ...] | None,
    writes: bool,
) -> Scope:
    """The scope one call runs in: its `project` argument, else the project its request names
    (an HTTP header), else its token's first project, else `default` (the server's).

    A project named by the request or the token may be new (its first write makes it); one
    named by the argument of a read must exist (a typo finds nothing rather than an empty
    project). A token limited to some projects (`reach`: keys, exactly as its tokens file lists
    them) gets only those, each with the shared space: "*", another project, or the shared space
    alone for a write are refused.

    Raises:
        InvalidInputError: an unknown project, or one the token may not reach.
    """
    if argument is not None:
        scope = scope_named(graph, argument) if not writes else _named_or_new(graph, argument)
    elif header is not None:
        scope = _named_or_new(graph, header)
    elif reach:
        scope = Scope(reach[0])
    else:
        scope = default
    if reach is None:
        return scope
    # Exactly the keys the tokens file lists: a short name could be another person's project.
    allowed = set(reach)
    if scope.project in allowed or (scope.project == SHARED and not writes):
        return scope
    shown = "every project" if scope.every else repr(project_name(scope.project or SHARED))
    raise InvalidInputError(
        "project",
        f"this token may reach {', '.join(map(repr, reach))} (and the shared space), not {shown}; nothing was done.",
    )


def _named_or_new(graph: KnowledgeGraph, given: str) -> Scope:
    """`scope_named`, with a name no project has taken as a new project's key."""
    wanted = given.strip()
    try:
        return scope_named(graph, wanted)
    except InvalidInputError as unknown:
        if isinstance(unknown, _NameOfSeveral) or not wanted or len(wanted) > MAX_PROJECT_KEY:
            raise
        return Scope(wanted)


def target_named(graph: KnowledgeGraph, given: str | None) -> str:
    """The project key entities move to: the graph's own project when `given` is None, "" for
    "shared", a known project by key or short name, else `given` itself as a new project's key.

    Raises:
        InvalidInputError: "*", an empty or too long name, or a name several projects share.
    """
    if given is None:
        if graph.scope.project is None:
            raise InvalidInputError("to", 'says nothing and this server has no project; name one, or "shared".')
        return graph.scope.project
    wanted = given.strip()
    if wanted.lower() == SHARED_NAME:
        return SHARED
    if not wanted or wanted == ALL_PROJECTS or len(wanted) > MAX_PROJECT_KEY or not wanted.isprintable():
        raise InvalidInputError("to", f"{given!r} is not a project; give a name of 1 to {MAX_PROJECT_KEY} characters.")
    try:
        return scope_named(graph, wanted).project or SHARED
    except InvalidInputError as unknown:
        if isinstance(unknown, _NameOfSeveral):
            raise
        return wanted


class _NameOfSeveral(InvalidInputError):
    """A short name several projects share: no new project may take it either."""


def scope_named(graph: KnowledgeGraph, given: str) -> Scope:
    """The scope a call's `project` argument asks for: "*" every project, "shared" the shared
    space alone, else the project whose key or short name it is (a key wins over a name).

    Raises:
        InvalidInputError: no project has that key or name, or several have that name.
    """
    wanted = given.strip()
    if wanted == ALL_PROJECTS:
        return EVERY
    if wanted.lower() == SHARED_NAME:
        return Scope(SHARED)
    with graph.store.read():
        known = [project for project in graph.store.project_keys() if project != SHARED]
    if wanted in known or wanted == graph.scope.project:
        return Scope(wanted)
    named = [project for project in known if project_name(project) == wanted]
    if len(named) == 1:
        return Scope(named[0])
    if named:
        raise _NameOfSeveral(
            "project", f"{wanted!r} is the name of {len(named)} projects ({', '.join(named)}); give the whole one."
        )
    listed = ", ".join(sorted({project_name(project) for project in known})) or "none yet"
    raise InvalidInputError(
        "project",
        f'no project is named {wanted!r} (projects: {listed}); give one of them, "shared", or "*" for all.',
    )


def move(graph: KnowledgeGraph, names: Sequence[str], target: str) -> MovedEntities:
    """Move the named entities the graph's scope sees to project `target` ("" for the shared
    space): one write transaction, of every project (`move_entities` says why)."""
    graph.check_names("names", names)
    if graph.reach is not None and target not in graph.reach:
        raise InvalidInputError(
            "to",
            f"this token may reach {', '.join(map(repr, graph.reach))}, not {project_name(target)!r}; "
            "nothing was moved.",
        )
    with graph.store.write():
        return move_entities(graph.store, graph.scope, names, target)


def list_projects(graph: KnowledgeGraph) -> list[ProjectCounts]:
    """The projects the graph's scope sees that hold anything, with their counts."""
    with graph.reading():
        return graph.store.project_counts()


def delete_project(graph: KnowledgeGraph, project: str) -> tuple[int, int]:
    """Delete every entity and relation of `project` (never the shared space); how many of each."""
    if project == SHARED:
        raise ProjectConflictError("project", "the shared space cannot be deleted; delete its entities instead.")
    with graph.store.write():
        return graph.store.delete_project(project)


def refuse_ambiguous(store: Store, scope: Scope, field: str, names: Sequence[str]) -> None:
    """Raise `AmbiguousNameError` when, seen across every project, one of `names` is an entity
    in more than one (inside the caller's transaction). A project's scope sees each name once,
    and a memory without projects has nothing to tell apart: neither reads anything more."""
    if not scope.every or not names or not store.holds_projects():
        return
    refuse_ambiguous_among(store.get_entities(list(dict.fromkeys(names))), scope, field)


def refuse_ambiguous_relations(store: Store, scope: Scope, field: str, keys: Sequence[tuple[str, str, str]]) -> None:
    """Raise `AmbiguousNameError` when, seen across every project, a relation key is held by two."""
    if not scope.every or not keys or not store.holds_projects():
        return
    wanted = set(keys)
    held: dict[tuple[str, str, str], set[str]] = {}
    for relation in store.relations_touching(sorted({key[0] for key in wanted})):
        if relation.key in wanted:
            held.setdefault(relation.key, set()).add(relation.project)
    for key, places in held.items():
        if len(places) > 1:
            raise AmbiguousNameError(field, f"{key[0]} -{key[2]}-> {key[1]}", sorted(places))


def taken_elsewhere(store: Store, scope: Scope, names: Sequence[str]) -> dict[str, list[str]]:
    """Of `names` that would become shared entities in `scope`, those projects it does not see
    hold, with the projects: a shared name must stay one entity in every project. Empty when the
    scope sees every project (its own reads see them) or is a project's (its names are its own)."""
    if scope.project != SHARED or not names:
        return {}
    held = store.projects_holding(list(dict.fromkeys(names)))
    return {name: [p for p in projects if p != SHARED] for name, projects in held.items() if set(projects) - {SHARED}}


def refuse_taken_elsewhere(store: Store, scope: Scope, field: str, names: Sequence[str]) -> None:
    """Raise `ProjectConflictError` when one of `names`, made shared in `scope`, is a project's."""
    taken = taken_elsewhere(store, scope, names)
    if taken:
        name, projects = next(iter(taken.items()))
        raise ProjectConflictError(
            field,
            f"{name!r} is an entity of project {', '.join(repr(project_name(p)) for p in projects)}: as a shared "
            "entity it would be a second one there. Nothing was changed: use another name, or move that one to "
            "the shared space (move_entities).",
        )


def relation_home(scope: Scope, endpoints: Sequence[Entity]) -> str:
    """The project a new relation between `endpoints` (the entities found of its two names) goes to.

    Raises:
        ProjectConflictError: seen across every project, its ends are in two different projects.
    """
    if not scope.every:
        return scope.home
    projects = sorted({entity.project for entity in endpoints if entity.project != SHARED})
    if len(projects) > 1:
        names = " and ".join(f"{entity.name!r} ({project_name(entity.project)})" for entity in endpoints)
        raise ProjectConflictError(
            "relations",
            f"would join {names}, which are in different projects; nothing was changed. A relation may join "
            "a project and the shared space, not two projects: move one entity first (move_entities).",
        )
    return projects[0] if projects else SHARED


@dataclass(frozen=True, slots=True)
class MovedEntities:
    """What `move_entities` did: the names moved, how many relations went with them, and the
    names the caller's scope does not see (nothing was done with those)."""

    moved: tuple[str, ...]
    relations: int
    missing: tuple[str, ...]


def move_entities(store: Store, scope: Scope, names: Sequence[str], target: str) -> MovedEntities:
    """Move the named entities `scope` sees to project `target` ("" for the shared space), with
    their facts. Runs inside the caller's write transaction of EVERY project (a move must see
    what every project holds to keep a shared name one entity).

    What follows an entity: the shared space's relations that name it, when it leaves the shared
    space for a project (they would name nothing in any other project); its project's relations,
    when it goes to another project and their other end goes too or is shared. Relations of its
    project stay when it becomes shared (the project still sees it).

    Raises:
        AmbiguousNameError: seen across every project, a name is held by two projects.
        ProjectConflictError: the target already sees one of the names; or a shared entity would
            leave while another project's relations name it; or a relation would join two projects.
    """
    unique = list(dict.fromkeys(names))
    everywhere = store.get_entities(unique)
    seen = [entity for entity in everywhere if scope.sees(entity.project)]
    refuse_ambiguous_among(seen, scope, "names")
    missing = tuple(name for name in unique if name not in {entity.name for entity in seen})
    moving = [entity for entity in seen if entity.project != target]
    if not moving:
        return MovedEntities((), 0, missing)
    _refuse_clashes(moving, everywhere, target)
    names_moving = {entity.name for entity in moving}
    relations = store.relations_touching(sorted(names_moving))
    follow: dict[str, list[tuple[str, str, str]]] = {}
    for entity in moving:
        for relation in relations:
            if entity.name not in (relation.from_, relation.to):
                continue
            if entity.project == SHARED:
                if relation.project == SHARED:
                    follow.setdefault(SHARED, []).append(relation.key)
                elif relation.project != target:
                    raise ProjectConflictError(
                        "names",
                        f"{entity.name!r} is shared and project {project_name(relation.project)!r} has a relation "
                        f"naming it ({relation.from_} -{relation.relation_type}-> {relation.to}); moved into "
                        f"{project_name(target)!r} it would name nothing there. Nothing was changed: delete or move "
                        "that relation first.",
                    )
            elif relation.project == entity.project and target != SHARED:
                other = relation.to if relation.from_ == entity.name else relation.from_
                if other not in names_moving and not _is_shared(everywhere, other, store):
                    raise ProjectConflictError(
                        "names",
                        f"moving {entity.name!r} to {project_name(target)!r} would leave its relation with {other!r} "
                        f"joining two projects. Nothing was changed: move {other!r} with it, or make it shared.",
                    )
                follow.setdefault(entity.project, []).append(relation.key)
    held_there = {relation.key for relation in relations if relation.project == target}
    repeated = sorted({key for keys in follow.values() for key in keys} & held_there)
    if repeated:
        from_, to, relation_type = repeated[0]
        raise ProjectConflictError(
            "names",
            f"{project_name(target)!r} holds the relation {from_} -{relation_type}-> {to} already, and the one "
            "that would follow the move would be a second. Nothing was changed: delete one of them first.",
        )
    by_source: dict[str, list[str]] = {}
    for entity in moving:
        by_source.setdefault(entity.project, []).append(entity.name)
    for source, moved_names in by_source.items():
        store.move_entities(moved_names, source, target)
    moved_relations = sum(
        store.move_relations(list(dict.fromkeys(keys)), source, target) for source, keys in follow.items()
    )
    return MovedEntities(tuple(entity.name for entity in moving), moved_relations, missing)


def refuse_ambiguous_among(entities: Sequence[Entity], scope: Scope, field: str) -> None:
    """`refuse_ambiguous` on entities already read."""
    if not scope.every:
        return
    projects: dict[str, list[str]] = {}
    for entity in entities:
        projects.setdefault(entity.name, []).append(entity.project)
    for name, held in projects.items():
        # Twice in one project is a JSONL file's old duplicate (the first counts, as before).
        places = list(dict.fromkeys(held))
        if len(places) > 1:
            raise AmbiguousNameError(field, name, places)


def _refuse_clashes(moving: Sequence[Entity], everywhere: Sequence[Entity], target: str) -> None:
    """Refuse when `target` would see a moving name twice: held there already, or held in the
    shared space; or, for the shared space, held by another project."""
    clashes = []
    for entity in moving:
        for other in everywhere:
            if other is entity or other.name != entity.name:
                continue
            if other.project in (target, SHARED) or target == SHARED:
                clashes.append(f"{entity.name!r} ({project_name(other.project)})")
    if clashes:
        raise ProjectConflictError(
            "names",
            f"{project_name(target)!r} would see {', '.join(clashes)} twice; nothing was changed. A name is one "
            "entity within a project and its shared space: rename one, or merge them (merge_entities).",
        )


def _is_shared(everywhere: Sequence[Entity], name: str, store: Store) -> bool:
    """Whether `name` is a shared entity (read when it is not among the entities at hand)."""
    for entity in everywhere:
        if entity.name == name:
            return entity.project == SHARED
    return any(entity.project == SHARED for entity in store.get_entities([name]))
