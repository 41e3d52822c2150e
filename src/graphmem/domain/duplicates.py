"""Entities that probably name one thing (core/names.py): named when one is created, and listed
across the memory, best first, each pair with the merge call that folds it.

    NameIndex: each entity's look-up keys ─► the entities under them, in memory
        built from `Store.entity_names` (names, types, projects, aliases: no facts) on first
        need (in the call for a small memory, else on a thread of its own, the checks finding
        nothing until it is done); built again when another process changed the memory and
        the last build is old enough (5 minutes, or a hundred times what the build took), and
        meanwhile told of what this process creates. A stale entry costs nothing: every
        candidate is checked in the store.
    duplicates_of(graph, created) ─► for each new entity: the entities it shares a key with,
        of an agreeing type, that `same_thing` calls one with it
    find_duplicates(graph) ─► every such pair in what the caller sees, best reason first
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from graphmem.core.models import Entity
from graphmem.core.names import Key, look_up, may_be_same, same_thing, types_agree
from graphmem.domain.graph import KnowledgeGraph

logger = logging.getLogger(__name__)

__all__ = ["Duplicate", "NameIndex", "duplicates_of", "find_duplicates", "name_index"]

_REBUILT_AFTER = 300.0
"""Seconds an index of a memory changed since (by another process: this one's creations are
added as they happen) is used before it is built again."""

BUILT_IN_THE_CALL = 5_000
"""Entities up to which the index is built in the call that first needs it (tens of
milliseconds); past them, on a thread of its own (372 ms at 40,000 entities)."""

_ROWS_BETWEEN_PAUSES = 200
"""Names a build adds between two pauses (about 1 ms of Python)."""

_BUCKET_AT_MOST = 500
"""Entities under one key a search compares (a key as common as a surname's first letter)."""

# The reasons, best first: how sure each is.
_ORDER = ("an alias of it", "the same name once normalised", "a nickname", "initials", "its acronym", "a typo of it")


@dataclass(frozen=True, slots=True)
class Duplicate:
    """`name` probably names what `existing` names, and why. `source` and `target` are the merge
    call's: the newer entity folds into the older."""

    name: str
    existing: str
    entity_type: str
    why: str
    project: str = ""
    """The existing entity's project."""
    new_project: str = ""

    @property
    def rank(self) -> int:
        return _ORDER.index(self.why) if self.why in _ORDER else len(_ORDER)


_Row = tuple[str, str, str, tuple[str, ...]]


class NameIndex:
    """The look-up keys of a memory's entity names, kept in memory (see the module's notes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: list[_Row] = []
        self._by_key: dict[Key, list[int]] = {}
        self._held: set[tuple[str, str]] = set()  # (project, name) of each row
        self._version: Hashable | None = None
        self._built_at = 0.0
        self._took = 0.0
        self._building = False
        self._created_while_building: list[_Row] = []  # told of while a build runs: added to it too

    def prepare(self, graph: KnowledgeGraph) -> None:
        """Make the index current enough for the look-ups of one call (`rows_under`)."""
        self._fresh(graph)

    def rows_under(self, names: Sequence[str]) -> list[list[_Row]]:
        """For each name, the entities sharing a look-up key with it, at most `_BUCKET_AT_MOST` a key."""
        looked_up = [look_up(name)[1] for name in names]
        found = []
        with self._lock:
            for name_probes in looked_up:
                seen: dict[int, None] = {}
                for key in name_probes:
                    bucket = self._by_key.get(key)
                    if bucket:
                        seen.update(dict.fromkeys(bucket[:_BUCKET_AT_MOST]))
                found.append([self._rows[index] for index in seen])
        return found

    def buckets(self, graph: KnowledgeGraph) -> list[list[_Row]]:
        """The rows under each key that holds two or more (the index built here if need be:
        the caller asked for the whole memory's pairs)."""
        self._fresh(graph, in_the_call=not self._built_at)
        with self._lock:
            found = []
            for key, indexes in self._by_key.items():
                if key[0] == "A":
                    continue  # long names of one acronym are not alike: met from the acronym's side
                if key[0] == "a":
                    indexes = sorted(indexes + self._by_key.get(("A", key[1]), []))  # creation order
                if len(indexes) > 1:
                    found.append([self._rows[index] for index in indexes[:_BUCKET_AT_MOST]])
            return found

    def add(self, entities: Iterable[Entity]) -> None:
        """Tell the index of entities this process just created."""
        rows = [(entity.name, entity.entity_type, entity.project, entity.aliases) for entity in entities]
        with self._lock:
            for row in rows:
                _add_to(self._rows, self._by_key, self._held, row)
            if self._building:
                self._created_while_building += rows

    def _fresh(self, graph: KnowledgeGraph, in_the_call: bool = False) -> None:
        """Build the index when it is missing, or stale and old enough: here for a small memory
        or when asked, else on a thread of its own (the calls meanwhile use what there is)."""
        version = graph.store.version()
        with self._lock:
            if self._building or (self._built_at and (version == self._version or version is None)):
                return
            if self._built_at and time.monotonic() - self._built_at < max(_REBUILT_AFTER, 100 * self._took):
                return
            self._building = True
        try:
            with graph.store.read():
                entities = graph.store.counts().entities
            if in_the_call or entities <= BUILT_IN_THE_CALL:
                self._build(graph, version)
            else:
                threading.Thread(target=self._build, args=(graph, version), name="graphmem-names", daemon=True).start()
        except BaseException:
            with self._lock:
                self._building = False  # a failed read must not leave the index never built again
            raise

    def _build(self, graph: KnowledgeGraph, version: Hashable | None) -> None:
        try:
            started = time.monotonic()
            with graph.store.read():
                names = graph.store.entity_names()
            # Built apart and swapped in, so that the calls meanwhile use the old index rather
            # than wait for the new one (0.3 s at 40,000 entities).
            rows: list[_Row] = []
            by_key: dict[Key, list[int]] = {}
            held: set[tuple[str, str]] = set()
            for done, row in enumerate(names, 1):
                _add_to(rows, by_key, held, row)
                if done % _ROWS_BETWEEN_PAUSES == 0:
                    # A call waiting for the interpreter gets it now, not after the 5 ms Python
                    # otherwise lets a busy thread run (a create waited 50 to 170 ms).
                    time.sleep(0)
            with self._lock:
                for row in self._created_while_building:
                    _add_to(rows, by_key, held, row)
                self._rows, self._by_key, self._held = rows, by_key, held
                self._version = version
                self._built_at = time.monotonic()
                self._took = self._built_at - started
        except Exception:  # a closed store, a lost database: the index is only ever a hint
            logger.warning("the name index for duplicates could not be built", exc_info=True)
        finally:
            with self._lock:
                self._building = False
                self._created_while_building = []


def _add_to(rows: list[_Row], by_key: dict[Key, list[int]], held: set[tuple[str, str]], row: _Row) -> None:
    if (row[2], row[0]) in held:
        return
    held.add((row[2], row[0]))
    index = len(rows)
    rows.append(row)
    for text in (row[0], *row[3]) if row[3] else (row[0],):
        for key in look_up(text)[0]:
            bucket = by_key.get(key)
            if bucket is None:
                by_key[key] = [index]
            elif bucket[-1] != index:
                bucket.append(index)


_INDEXES: weakref.WeakKeyDictionary[KnowledgeGraph, NameIndex] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


def name_index(graph: KnowledgeGraph) -> NameIndex:
    """The name index of a graph's memory, made on first need and kept while the graph lives."""
    with _INDEXES_LOCK:
        index = _INDEXES.get(graph)
        if index is None:
            index = _INDEXES[graph] = NameIndex()
        return index


def _seen_by(graph: KnowledgeGraph, project: str) -> bool:
    scope = graph.scope
    return scope.every or project in scope.visible


def duplicates_of(graph: KnowledgeGraph, created: Sequence[Entity]) -> list[Duplicate]:
    """For each entity just created, the existing ones it probably duplicates (at most three each)."""
    if not created:
        return []
    index = name_index(graph)
    index.prepare(graph)
    new_names = {entity.name for entity in created}
    found: list[Duplicate] = []
    for entity, rows in zip(created, index.rows_under([entity.name for entity in created]), strict=True):
        candidates: dict[str, Duplicate] = {}
        for name, entity_type, project, aliases in rows:
            if name in new_names or not may_be_same(entity.name, name, aliases):
                continue
            if not _seen_by(graph, project) or not types_agree(entity.entity_type, entity_type):
                continue
            why = same_thing(entity.name, name, aliases)
            if why is not None and name not in candidates:
                candidates[name] = Duplicate(entity.name, name, entity_type, why, project, entity.project)
        found += sorted(candidates.values(), key=lambda duplicate: duplicate.rank)[:3]
    index.add(created)
    if not found:
        return []
    # Only those still there: the index may hold a name since renamed or deleted.
    with graph.reading():
        there = graph.store.existing_names(sorted({duplicate.existing for duplicate in found}))
    return [duplicate for duplicate in found if duplicate.existing in there]


def find_duplicates(graph: KnowledgeGraph) -> list[Duplicate]:
    """Every pair of entities the caller sees that probably name one thing, best reason first;
    in each, the newer entity is `name` and the older `existing` (the merge's target)."""
    pairs: dict[tuple[str, str], Duplicate] = {}
    for bucket in name_index(graph).buckets(graph):
        visible = [row for row in bucket if _seen_by(graph, row[2])]
        for newer_at, newer in enumerate(visible):
            for older in visible[:newer_at]:
                if newer[0] == older[0] or (older[0], newer[0]) in pairs or not types_agree(newer[1], older[1]):
                    continue
                why = same_thing(newer[0], older[0], older[3])
                if why is not None:
                    pairs[older[0], newer[0]] = Duplicate(newer[0], older[0], older[1], why, older[2], newer[2])
    with graph.reading():
        names = sorted({name for pair in pairs for name in pair})
        there = graph.store.existing_names(names) if names else set()
    kept = [duplicate for duplicate in pairs.values() if duplicate.name in there and duplicate.existing in there]
    return sorted(kept, key=lambda duplicate: duplicate.rank)
