"""Finding how entities connect: neighbours, shortest and all paths, subgraphs (spec 004).

Relations are directed, but traversals follow them both ways: "Alice works_at Acme"
connects Acme to Alice as much as Alice to Acme. A traversal expands one level at a
time with indexed store queries (the relation keys touching the frontier), so a one-hop
question reads one entity's relations and never the whole graph. Every traversal is
bounded (depth, paths, visited names, steps) and its answer names the bound that
stopped it, so a model can tell "there is nothing more" from "I stopped looking".

Relations may name endpoints that are not entities (the official server allows it).
Traversals pass through such names like any other: they appear in paths and
relations, but have no entity to show.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from graphmem.core.errors import EntityNotFoundError, InvalidInputError
from graphmem.core.models import Graph, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.navigation import canonical_names

__all__ = [
    "MAX_STEPS",
    "MAX_VISITED",
    "Bound",
    "Direction",
    "Neighbourhood",
    "PathsFound",
    "ShortestPath",
    "Subgraph",
    "all_paths",
    "neighbourhood",
    "shortest_path",
    "subgraph",
]

Direction = Literal["both", "outgoing", "incoming"]

MAX_VISITED = 10_000
"""The most names one traversal may reach; past it the traversal stops and says so."""

MAX_STEPS = 200_000
"""The most path extensions find_all_paths may try before it stops and says so."""


@dataclass(frozen=True, slots=True)
class Bound:
    """The limit that stopped a traversal before it had seen everything it could reach.

    Attributes:
        name: the argument or built-in cap: `maxDepth`, `depth`, `maxPaths`, `maxNodes`
            or `maxSteps`.
        limit: its value.
    """

    name: str
    limit: int


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """What a traversal reached from some names.

    Attributes:
        names: every reached name except the starting ones, nearest first (then in the
            order found), entities or not.
        distances: hops from the nearest starting name, for every reached name.
        relations: the relations followed, in creation order.
        bound: what stopped the traversal early, or None when it went as deep as asked.
    """

    names: tuple[str, ...]
    distances: dict[str, int]
    relations: tuple[Relation, ...]
    bound: Bound | None


@dataclass(frozen=True, slots=True)
class ShortestPath:
    """A shortest path between two names, or why there is none.

    Attributes:
        names: the path from start to end, both included; empty when none was found.
        relations: for each hop, a relation linking its two names (in its real direction).
        bound: when no path was found, the bound that stopped the search, or None when
            the two are simply not connected.
    """

    names: tuple[str, ...]
    relations: tuple[Relation, ...]
    bound: Bound | None

    @property
    def found(self) -> bool:
        return bool(self.names)


@dataclass(frozen=True, slots=True)
class PathsFound:
    """Simple paths between two names, shortest first.

    Attributes:
        paths: each path's names, start and end included, and a relation per hop.
        bound: what stopped the search before every path within `maxDepth` was found.
    """

    paths: tuple[tuple[tuple[str, ...], tuple[Relation, ...]], ...]
    bound: Bound | None


def _check_depth(field: str, depth: int, most: int) -> None:
    if not 0 <= depth <= most:
        raise InvalidInputError(field, f"is {depth}; give a number from 0 to {most}.")


def neighbourhood(
    graph: KnowledgeGraph,
    names: Sequence[str],
    depth: int,
    *,
    direction: Direction = "both",
    relation_type: str | None = None,
    max_depth: int,
) -> Neighbourhood:
    """Every name within `depth` hops of `names`, expanding one level at a time.

    Args:
        names: where to start (names or aliases of entities).
        depth: how many hops to go; 0 reaches nothing but the starting names.
        direction: follow relations from their source to their target (`outgoing`),
            the other way (`incoming`) or both ways.
        relation_type: follow only relations of this type.
        max_depth: the largest depth allowed.

    Raises:
        EntityNotFoundError: a starting name is not an entity.
    """
    graph.check_names("names", names)
    _check_depth("depth", depth, max_depth)
    if relation_type is not None:
        graph.check_names("relationType", [relation_type])
    with graph.reading():
        seeds = list(dict.fromkeys(canonical_names(graph, names)))
        present = graph.store.existing_names(seeds)
        for seed in seeds:
            if seed not in present:
                raise EntityNotFoundError(seed, EntityNotFoundError.READ_HINT)
        return _expand(graph, seeds, depth, direction, relation_type)


def _expand(
    graph: KnowledgeGraph, seeds: list[str], depth: int, direction: Direction, relation_type: str | None
) -> Neighbourhood:
    distances = dict.fromkeys(seeds, 0)
    # The relations followed, nearest level first and in creation order within a level.
    followed: dict[tuple[str, str, str], None] = {}
    frontier = seeds
    bound: Bound | None = None
    for level in range(1, depth + 1):
        if not frontier:
            break
        next_frontier: list[str] = []
        at_frontier = set(frontier)
        for key in graph.store.relation_keys_touching(frontier):
            from_, to, type_ = key
            if relation_type is not None and type_ != relation_type:
                continue
            ends = []
            if direction != "incoming" and from_ in at_frontier:
                ends.append(to)
            if direction != "outgoing" and to in at_frontier:
                ends.append(from_)
            for other in ends:
                if other not in distances:
                    if len(distances) >= MAX_VISITED:
                        bound = Bound("maxNodes", MAX_VISITED)
                        break
                    distances[other] = level
                    next_frontier.append(other)
                followed[key] = None
            if bound is not None:
                break
        frontier = next_frontier
        if bound is not None:
            break
    reached = tuple(name for name in distances if distances[name] > 0)
    return Neighbourhood(reached, distances, tuple(Relation(*key) for key in followed), bound)


@dataclass(frozen=True, slots=True)
class Subgraph:
    """The entities around some names and the relations among them.

    Attributes:
        graph: the named entities first, then the others nearest first; the relations
            with both ends in it.
        not_found: names asked for that are neither an entity's name nor its alias.
        bound: what stopped the expansion early, or None.
    """

    graph: Graph
    not_found: tuple[str, ...]
    bound: Bound | None
    unloaded: int = 0
    """Reached names whose entities were not fetched (past `load_at_most`)."""


def subgraph(
    graph: KnowledgeGraph, names: Sequence[str], depth: int, *, max_depth: int, load_at_most: int | None = None
) -> Subgraph:
    """The entities within `depth` hops of `names` and every relation among them.

    Names that are not entities are reported and skipped, so one unknown name among
    several does not spoil the answer; names that are not entities but are reached
    through relations are passed through and not listed.

    Args:
        load_at_most: fetch only the first this many entities (the named ones, then the
            nearest), with the relations among everything reached that touch them: what
            an answer cut to a budget can show.
    """
    graph.check_names("names", names)
    _check_depth("depth", depth, max_depth)
    with graph.reading():
        canonical = canonical_names(graph, names)
        present = graph.store.existing_names(canonical)
        found_seeds = list(dict.fromkeys(name for name in canonical if name in present))
        not_found = tuple(
            dict.fromkeys(given for given, name in zip(names, canonical, strict=True) if name not in present)
        )
        reached = _expand(graph, found_seeds, depth, "both", None)
        everyone = [*found_seeds, *reached.names]
        inside = set(everyone)
        shown = everyone if load_at_most is None else everyone[:load_at_most]
        entities = {entity.name: entity for entity in reversed(graph.store.get_entities(shown))}
        relations = tuple(
            relation
            for relation in graph.relations_to_show(shown)
            if relation.from_ in inside and relation.to in inside
        )
    ordered = tuple(entities[name] for name in shown if name in entities)
    return Subgraph(graph.graph_of(ordered, relations), not_found, reached.bound, len(everyone) - len(shown))


def _check_path_arguments(graph: KnowledgeGraph, start: str, end: str, max_depth: int, most_depth: int) -> None:
    graph.check_names("from", [start])
    graph.check_names("to", [end])
    _check_depth("maxDepth", max_depth, most_depth)


def _path_ends(graph: KnowledgeGraph, start: str, end: str) -> tuple[str, str]:
    """The entity names of a path's two ends (given by name or alias), inside a read.

    Raises:
        EntityNotFoundError: an end is not an entity.
    """
    start, end = canonical_names(graph, [start, end])
    present = graph.store.existing_names([start, end])
    for name in (start, end):
        if name not in present:
            raise EntityNotFoundError(name, EntityNotFoundError.READ_HINT)
    return start, end


def shortest_path(graph: KnowledgeGraph, start: str, end: str, max_depth: int, *, most_depth: int) -> ShortestPath:
    """A shortest path between two entities, relations followed both ways.

    Searches from both ends at once, always widening the smaller frontier, so a path
    of length d costs about two searches of depth d/2.

    Raises:
        EntityNotFoundError: an endpoint is not an entity.
    """
    _check_path_arguments(graph, start, end, max_depth, most_depth)
    with graph.reading():
        start, end = _path_ends(graph, start, end)
        if start == end:
            return ShortestPath((start,), (), None)
        return _meet_in_the_middle(graph, start, end, max_depth)


class _Search:
    """One side of a two-sided breadth-first search: what it reached and how."""

    def __init__(self, root: str) -> None:
        self.distance = {root: 0}
        self.via: dict[str, tuple[str, Relation]] = {}
        self.frontier = [root]
        self.depth = 0

    def chain(self, name: str) -> list[tuple[str, Relation]]:
        """The steps from `name` back to this side's root."""
        steps = []
        while name in self.via:
            previous, relation = self.via[name]
            steps.append((previous, relation))
            name = previous
        return steps


def _meet_in_the_middle(graph: KnowledgeGraph, start: str, end: str, max_depth: int) -> ShortestPath:
    forward, backward = _Search(start), _Search(end)
    while forward.depth + backward.depth < max_depth:
        if not forward.frontier or not backward.frontier:
            return ShortestPath((), (), None)  # one side ran out: not connected
        side, other = (forward, backward) if len(forward.frontier) <= len(backward.frontier) else (backward, forward)
        side.depth += 1
        meetings: list[str] = []
        next_frontier: list[str] = []
        for key in graph.store.relation_keys_touching(side.frontier):
            relation = Relation(*key)
            for name, neighbour in ((key[0], key[1]), (key[1], key[0])):
                if side.distance.get(name) != side.depth - 1 or neighbour in side.distance:
                    continue
                if len(side.distance) + len(other.distance) >= MAX_VISITED:
                    return ShortestPath((), (), Bound("maxNodes", MAX_VISITED))
                side.distance[neighbour] = side.depth
                side.via[neighbour] = (name, relation)
                next_frontier.append(neighbour)
                if neighbour in other.distance:
                    meetings.append(neighbour)
        side.frontier = next_frontier
        if meetings:
            # Every meeting found while widening one level is a candidate; the best one
            # is a shortest path (no shorter one could have been missed a level earlier).
            middle = min(meetings, key=lambda name: other.distance[name])
            return _joined(forward, backward, middle)
    more = forward.frontier and backward.frontier
    return ShortestPath((), (), Bound("maxDepth", max_depth) if more else None)


def _joined(forward: _Search, backward: _Search, middle: str) -> ShortestPath:
    head = list(reversed(forward.chain(middle)))  # (previous, relation) from the start
    tail = backward.chain(middle)  # (next, relation) towards the end
    names = [name for name, _ in head] + [middle] + [name for name, _ in tail]
    relations = [relation for _, relation in head] + [relation for _, relation in tail]
    return ShortestPath(tuple(names), tuple(relations), None)


def all_paths(
    graph: KnowledgeGraph, start: str, end: str, max_depth: int, max_paths: int, *, most_depth: int
) -> PathsFound:
    """Simple paths (no name twice) between two entities, shortest first, relations followed both ways.

    Paths are found length by length; a search from `end` first measures how far each
    name is from it, so a path that could not reach `end` within `max_depth` is never
    extended.

    Raises:
        EntityNotFoundError: an endpoint is not an entity.
    """
    _check_path_arguments(graph, start, end, max_depth, most_depth)
    if max_paths < 1:
        raise InvalidInputError("maxPaths", f"is {max_paths}; give 1 or more.")
    with graph.reading():
        start, end = _path_ends(graph, start, end)
        if start == end:
            return PathsFound((((start,), ()),), None)
        return _PathFinder(graph, start, end, max_depth, max_paths).run()


class _PathFinder:
    def __init__(self, graph: KnowledgeGraph, start: str, end: str, max_depth: int, max_paths: int) -> None:
        self.graph = graph
        self.start, self.end = start, end
        self.max_depth, self.max_paths = max_depth, max_paths
        # Each name's neighbours, with the key of one relation linking them: paths are
        # sequences of names, so one relation per neighbour is enough.
        self.adjacent: dict[str, dict[str, tuple[str, str, str]]] = {}
        self.paths: list[tuple[tuple[str, ...], tuple[Relation, ...]]] = []
        self.steps = 0
        self.bound: Bound | None = None

    def _load(self, names: Iterable[str]) -> None:
        wanted = [name for name in names if name not in self.adjacent]
        if not wanted:
            return
        fresh: dict[str, dict[str, tuple[str, str, str]]] = {name: {} for name in wanted}
        for key in self.graph.store.relation_keys_touching(wanted):
            from_, to, _ = key
            if from_ == to:
                continue
            if from_ in fresh:
                fresh[from_].setdefault(to, key)
            if to in fresh:
                fresh[to].setdefault(from_, key)
        self.adjacent.update(fresh)

    def _distances_to_end(self) -> tuple[dict[str, int], int]:
        """Hops from each name near `end` to it, and a lower bound for the names not measured."""
        distance = {self.end: 0}
        frontier = [self.end]
        for level in range(1, self.max_depth):
            self._load(frontier)
            next_frontier = []
            for name in frontier:
                for neighbour in self.adjacent[name]:
                    if neighbour not in distance:
                        distance[neighbour] = level
                        next_frontier.append(neighbour)
            frontier = next_frontier
            if not frontier:
                return distance, self.max_depth + 1  # everything connected to `end` is measured
            if len(self.adjacent) >= MAX_VISITED:
                self.bound = Bound("maxNodes", MAX_VISITED)
                return distance, level + 1
        return distance, self.max_depth

    def run(self) -> PathsFound:
        distance, unmeasured = self._distances_to_end()
        if distance.get(self.start, unmeasured) > self.max_depth:
            return PathsFound((), self.bound)
        for length in range(distance.get(self.start, unmeasured), self.max_depth + 1):
            self._extend([self.start], [], {self.start}, length, distance, unmeasured)
            if len(self.paths) >= self.max_paths or self.bound is not None:
                break
        if len(self.paths) >= self.max_paths and self.bound is None:
            self.bound = Bound("maxPaths", self.max_paths)
        return PathsFound(tuple(self.paths[: self.max_paths]), self.bound)

    def _extend(
        self,
        names: list[str],
        relations: list[Relation],
        on_path: set[str],
        length: int,
        distance: dict[str, int],
        unmeasured: int,
    ) -> None:
        here = names[-1]
        if here == self.end:
            if len(relations) == length:
                self.paths.append((tuple(names), tuple(relations)))
            return
        if len(self.adjacent) >= MAX_VISITED and here not in self.adjacent:
            self.bound = Bound("maxNodes", MAX_VISITED)
            return
        self._load([here])
        # Fetch the relations of every neighbour worth entering in one query, not one each.
        self._load(
            [
                neighbour
                for neighbour in self.adjacent[here]
                if neighbour not in on_path and len(relations) + 1 + distance.get(neighbour, unmeasured) <= length
            ][: max(0, MAX_VISITED - len(self.adjacent))]
        )
        for neighbour, key in self.adjacent[here].items():
            if len(self.paths) >= self.max_paths or self.bound is not None:
                return
            self.steps += 1
            if self.steps > MAX_STEPS:
                self.bound = Bound("maxSteps", MAX_STEPS)
                return
            if neighbour in on_path or len(relations) + 1 + distance.get(neighbour, unmeasured) > length:
                continue
            names.append(neighbour)
            relations.append(Relation(*key))
            on_path.add(neighbour)
            self._extend(names, relations, on_path, length, distance, unmeasured)
            on_path.discard(neighbour)
            names.pop()
            relations.pop()
