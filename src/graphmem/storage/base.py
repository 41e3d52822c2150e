"""The `Store` protocol every backend meets, and the mapping of driver errors.

The protocol is deliberately small and granular: the domain (`graphmem.domain`) asks for
exactly the rows it needs, so a backend with indexes never has to load the whole
memory to answer about a few entities.

Every method must be called inside `write()` or `read()`. `write()` is one
all-or-nothing transaction: when its block raises, nothing it did is kept, and
when it returns normally the change is durable on disk.

A transaction runs in a `Scope` (graphmem.core.projects): every method inside it answers
as if the memory held only the projects the scope sees (a project and the shared space,
or every project). A backend filters in its own indexes, so that a call in a small project
of a large memory costs what the project costs. Entities and relations read carry their
`project`; those inserted go to the `project` they carry (the domain decides which).
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from graphmem.core.changes import ChangeFilter, ChangePage, NewChange
from graphmem.core.errors import StorageBusyError, StorageError, TimeLimitError
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import EVERY, Scope
from graphmem.storage.entity_query import EntityQuery
from graphmem.storage.words import SearchResult, WordSearch

__all__ = [
    "AnalyticsRows",
    "EntitySummary",
    "FieldHits",
    "ProjectCounts",
    "Store",
    "StoreCounts",
    "describes_damage",
    "map_backend_errors",
    "map_driver_errors",
]


@dataclass(frozen=True, slots=True)
class FieldHits:
    """Where a lower-cased needle occurs in one entity: its name, its type, its observations."""

    in_name: bool
    in_type: bool
    observation_hits: int
    order: int = 0
    """The entity's place in creation order (any increasing number), to break ranking ties."""


@dataclass(frozen=True, slots=True)
class StoreCounts:
    entities: int
    relations: int
    observations: int


@dataclass(frozen=True, slots=True)
class ProjectCounts:
    """What one project (or the shared space, project "") holds, and when it was last written."""

    project: str
    entities: int
    relations: int
    observations: int
    last_written: str | None
    """The latest `updatedAt` (UTC, ISO 8601) of its entities; None when none has one."""


@dataclass(frozen=True, slots=True)
class EntitySummary:
    """An entity without its texts: what get_analytics reports about it."""

    name: str
    entity_type: str
    created_at: str | None
    updated_at: str | None
    version: int | None
    importance: float | None
    observation_count: int
    degree: int


@dataclass(frozen=True, slots=True)
class AnalyticsRows:
    """The rows behind get_analytics, each list at most `limit` long.

    Attributes:
        recent: most recently updated first (entities without `updatedAt` last; ties: newest first).
        important: highest `importance` first (entities without one last; ties: newest first).
        connected: most relations first (ties: the later name first).
        unconnected: entities no relation touches, in creation order, and how many in all.
        dangling: names relations use that are not entities, and how many in all.
    """

    recent: list[EntitySummary]
    important: list[EntitySummary]
    connected: list[EntitySummary]
    unconnected: list[EntitySummary]
    unconnected_total: int
    dangling: list[str]
    dangling_total: int


class Store(Protocol):
    """What the domain needs from a storage backend."""

    location: str
    """Where the memory lives, for people (a path or a URL without its password)."""

    def write(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        """A durable, all-or-nothing write transaction (serialised with other writers) in `scope`.

        A transaction opened inside another joins it, in the outer one's scope; inside one of
        every project it may ask for a narrower scope, which its block then sees (an import puts
        each project's entities where they belong in one transaction); asking for another scope
        inside a project's raises ValueError.
        """
        ...

    def read(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        """A consistent snapshot for several reads, in `scope`."""
        ...

    def bulk_insert(self) -> AbstractContextManager[None]:
        """Inside `write()`: many inserts follow and no deletes, so the store may bring
        its indexes (and `counts()`) up to date once, at the end, instead of row by row."""
        ...

    def existing_names(self, names: Sequence[str]) -> set[str]:
        """The subset of `names` that are entities in memory."""
        ...

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        """Each of `names` that is an entity's name or alias, mapped to that entity's name.

        An entity's own name wins over another entity's alias; an alias two entities share
        resolves to the older one. Names that match nothing are left out.
        """
        ...

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        """The named entities that exist, in the order they were created."""
        ...

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity, in the order they were created."""
        ...

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation, in the order they were created."""
        ...

    def time_limit(self, seconds: float) -> AbstractContextManager[None]:
        """Stop the store's work in the block once `seconds` have passed since it began: the
        running statement is interrupted, its transaction rolls back and `TimeLimitError`
        is raised. 0 means no limit. A backend that cannot stop midway may ignore it."""
        ...

    def integrity_problems(self) -> list[str]:
        """What a quick check of the memory finds wrong (SQLite's quick_check, a JSONL file's
        unreadable lines); empty when it is intact."""
        ...

    def wait_for_locks(self, seconds: float) -> None:
        """How long a transaction waits for another process's lock on the memory before it
        gives up with `StorageBusyError`, having changed nothing. A server sets it short
        and waits between attempts itself, so that it answers other calls meanwhile."""
        ...

    def committed_writes(self) -> int:
        """How many write transactions this store has committed: when it has not moved
        across a call that failed busy, that call wrote nothing and may be made again."""
        ...

    def version(self) -> Hashable | None:
        """A token that stays equal only while the memory stays as it is, whoever writes to it;
        None when the store cannot tell (or inside a transaction), and nothing read may be reused.

        What lets a caller keep an answer until the memory changes.
        """
        ...

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        """The whole graph as the official read_graph answers it (`{"entities": [...],
        "relations": [...]}`, official keys only, in creation order), or None when it holds
        more than `at_most` entities.

        The answer to a small memory's read_graph, built without entity and relation
        objects: on a memory of a hundred entities those cost more than the rest of the call.
        """
        ...

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        """One page of entities in creation order, and how many there are in all.

        Args:
            entity_type: only entities of exactly this type; every entity when None.
            offset: how many matching entities to skip.
            limit: how many to return at most; all the rest when None.
        """
        ...

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        """One page of the entities matching every filter of `query`, in its order, and how
        many match in all (query_nodes). `EntityQuery` says what each filter and sort means;
        `entity_query.answer_in_python` is the reference answer every backend gives."""
        ...

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        """Relations with either endpoint in `names`, in the order they were created."""
        ...

    def relations_among(self, names: Sequence[str], limit: int) -> list[Relation]:
        """Relations with both endpoints in `names`, in creation order, at most `limit` of them.

        The explorer draws the relations between the entities it shows; a name that many
        relations touch must not make that read as long as all of them.
        """
        ...

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        """The keys `(from, to, relationType)` of `relations_touching(names)`, in the same order.

        Traversals walk many relations and show few: keys are much cheaper than relations.
        """
        ...

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """The subset of relation keys `(from, to, relationType)` that are in memory."""
        ...

    def observations_of(self, name: str) -> list[str] | None:
        """The observations of one entity, or None when there is no such entity."""
        ...

    def find_text(self, needle: str) -> dict[str, FieldHits]:
        """Entities whose lower-cased name, type or observations contain `needle` (already lower-case)."""
        ...

    # -- ranked search (issue 3, part 1) ---------------------------------------------------

    def search_entities(self, search: WordSearch) -> SearchResult:
        """One page of entities ranked as `WordSearch` describes, best first.

        The official matches come first and none is ever left out of an unlimited search;
        the word index (BM25 over names, aliases, types and observations) orders them and
        adds the entities that match only some words. A backend that can should order and
        cut in its index, so a limited search never loads every matching entity, and
        name no more hits than `named_at_most` asks for.
        """
        ...

    # -- end of ranked search --------------------------------------------------------------

    def counts(self) -> StoreCounts: ...

    # -- navigation (issue 3, parts 3 and 4) -----------------------------------------------

    def entity_type_counts(self) -> list[tuple[str, int]]:
        """Each entity type with how many entities have it, most common first, ties by type."""
        ...

    def relation_type_counts(self) -> list[tuple[str, int]]:
        """Each relation type with how many relations have it, most common first, ties by type."""
        ...

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        """One page of the relations matching every given field (None matches any), in
        creation order, and how many match in all."""
        ...

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        """The rows behind get_analytics, for the entities of one thread (`threadId`) or all."""
        ...

    def most_connected(self, entity_type: str | None, offset: int, limit: int) -> list[EntitySummary]:
        """One page of the entities (of `entity_type`, or all), most relations first.

        Ties, and the entities no relation touches (which come last), go by name, the later
        name first. A page near the top costs the same however large the memory is: the
        explorer's overview asks for one on every visit.
        """
        ...

    # -- end of navigation -----------------------------------------------------------------

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        """Add entities whose names are known not to exist yet."""
        ...

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        """Add relations whose keys are known not to exist yet."""
        ...

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        """Append observations to an existing entity."""
        ...

    def append_observations_batch(self, additions: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Append observations to several existing entities at once: each (name, contents) in order."""
        ...

    def update_extras(self, entities: Sequence[Entity]) -> None:
        """Give each existing entity of the same name the extra of the one given (name, type and facts unchanged)."""
        ...

    def update_entity(self, name: str, changed: Entity) -> None:
        """Give entity `name` the name, type and extra of `changed`, keeping its place and observations.

        The new name is known not to be another entity's. Relations are not touched.
        """
        ...

    def delete_entities(self, names: Sequence[str]) -> int:
        """Delete the named entities with their observations and every relation touching them.

        In projects: a relation touches an entity when it names it and its names are those of
        the entity's project (a relation of that project; for a shared entity, of any project,
        since no project can hold a name the shared space holds).

        Returns:
            how many entities were deleted.
        """
        ...

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        """Remove every observation of `name` equal to one of `contents`; returns how many went."""
        ...

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        """Delete relations by key; returns how many existed."""
        ...

    # -- the change log (graphmem.core.changes) -----------------------------------------------

    def append_change(self, change: NewChange) -> None:
        """Record `change` inside the write transaction that made it; the store numbers it and
        gives it its time (never earlier than the change before it)."""
        ...

    def forget_changes(self, before: str) -> int:
        """Delete the changes made before `before` (ISO 8601 UTC, as `Change.at`), inside a write
        transaction, and remember that the history now starts there; how many went."""
        ...

    def history_since(self) -> str | None:
        """Where the kept history starts (`forget_changes`); None when nothing was forgotten."""
        ...

    def list_changes(self, where: ChangeFilter, limit: int) -> ChangePage:
        """The changes `where` asks for, newest first, at most `limit`: in a project's scope, those
        that name an entity of the project or of the shared space."""
        ...

    def rewrite_changes(self, clean: Callable[[Any], Any]) -> int:
        """Pass every recorded change's operations, and every entity name the log keeps, through
        `clean` (a JSON value in, the value to keep out), and store what it changed, inside a
        write transaction; how many changes changed. Taking secrets out of the history."""
        ...

    # -- names (graphmem.core.names) -------------------------------------------------------------

    def entity_names(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        """Every entity of every project, whatever the scope, as (name, type, project, aliases),
        in creation order: what a look for duplicates reads, without the facts. Inside a transaction."""
        ...

    # -- valid time (graphmem.core.validity) ---------------------------------------------------

    def timed_entities(self) -> list[Entity]:
        """Every entity, of every project whatever the scope, that may hold a fact for a time
        only: its extra mentions `validFrom` or `validUntil`, or a current fact starts with `[`
        (a `[2024-03-01]` prefix). A superset is allowed: the domain reads the records. Inside a
        transaction."""
        ...

    def next_fact_end(self) -> str | None:
        """When the first current fact stops holding (an instant, as the domain set it with
        `set_next_fact_end`); None when no fact ends. May be earlier than the truth, never later."""
        ...

    def set_next_fact_end(self, when: str | None) -> None:
        """Keep `next_fact_end`, inside a write transaction."""
        ...

    # -- projects ---------------------------------------------------------------------------

    def move_entities(self, names: Sequence[str], source: str, target: str) -> int:
        """Give the entities of project `source` with these names (with their observations) to
        project `target`, whatever the scope; returns how many moved. Their relations stay where
        they are (the domain moves those it decides to, with `move_relations`). The domain has
        made sure the names are free in `target`."""
        ...

    def move_relations(self, keys: Sequence[tuple[str, str, str]], source: str, target: str) -> int:
        """Give the relations of project `source` with these keys to project `target`, whatever
        the scope; returns how many moved. The keys are known to be free in `target`."""
        ...

    def holds_projects(self) -> bool:
        """Whether any entity or relation belongs to a project (not the shared space), whatever
        the scope; answered from an index (a memory without projects answers as before them)."""
        ...

    def projects_holding(self, names: Sequence[str]) -> dict[str, list[str]]:
        """For each of `names` some entity has, the projects whose entities have it, whatever the
        scope (oldest first): what keeps a shared name one entity in every project."""
        ...

    def project_keys(self) -> list[str]:
        """The key of every project that holds an entity or a relation, whatever the scope, in
        order (the shared space, "", first when it holds anything); a few index look-ups a
        project, so that a call naming a project finds it at any size of memory."""
        ...

    def project_counts(self) -> list[ProjectCounts]:
        """Each project the scope sees that holds an entity or a relation, with its counts, in
        the order of their keys (the shared space, "", first)."""
        ...

    def delete_project(self, project: str) -> tuple[int, int]:
        """Delete every entity (with its observations) and every relation of `project`; the
        shared space's relations that name its entities stay. Returns (entities, relations)."""
        ...

    # -- end of projects -------------------------------------------------------------------

    def size_on_disk(self) -> int:
        """How many bytes the memory takes on disk (with any journal beside it)."""
        ...

    def compact(self, thorough: bool = False) -> None:
        """Give back the space that deleted data still takes, outside any transaction.

        Args:
            thorough: leave no deleted text in the store's files either (taking secrets out):
                PostgreSQL rewrites its tables (VACUUM FULL, which locks them while it runs);
                SQLite's compaction always rewrites its file.
        """
        ...

    def close(self) -> None: ...


def describes_damage(message: str) -> bool:
    """Whether a SQLite error's message says the file has damaged pages (SQLITE_CORRUPT)."""
    return "malformed" in message or "corrupt" in message


_DISK_FULL = (
    "The disk holding the memory is full ({reason}); nothing was changed. "
    "Free some space (or raise the quota) and retry the call."
)


@contextmanager
def map_driver_errors() -> Iterator[None]:
    """Turn SQLite driver exceptions into `StorageError`s, so no driver type or SQL leaves storage/.

    Safe around a caller's block inside a transaction: only the store talks to the driver,
    so whatever else the caller raises (a file it reads, a validation error) passes as is.
    """
    try:
        yield
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if "locked" in message or "busy" in message:
            raise StorageBusyError(
                "The memory stayed locked by another process for too long; nothing was changed. Retry the call."
            ) from exc
        if "disk is full" in message:  # SQLITE_FULL: the same advice as an ENOSPC from a file write
            raise StorageError(_DISK_FULL.format(reason=message)) from exc
        if "interrupted" in message:
            # Only the store's time limit interrupts a statement (see SQLiteStore.time_limit).
            raise TimeLimitError(
                "The call ran past the server's time limit and was stopped; nothing was changed. "
                "Ask for less at once (a limit, fewer names, a narrower query) and call again."
            ) from exc
        raise StorageError(f"The memory database failed ({message}); nothing was changed.") from exc
    except sqlite3.DatabaseError as exc:
        message = str(exc)
        if describes_damage(message):
            # SQLITE_CORRUPT: damaged pages (issue 27, item 12). Every call that reads them
            # fails the same way until the file is replaced: say so, and how.
            raise StorageError(
                f"The memory database is damaged ({message}); nothing was changed. Restore it from a backup, "
                "or export what can still be read with `graphmem export` and import it into a new memory "
                "(see Troubleshooting in docs/operations.md)."
            ) from exc
        raise StorageError(f"The memory database failed ({message}); nothing was changed.") from exc


@contextmanager
def map_backend_errors() -> Iterator[None]:
    """Driver errors and the store's own file errors as `StorageError`s.

    Only around the store's own work: an `OSError` here is taken to be about the memory file.
    """
    try:
        with map_driver_errors():
            yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageError(_DISK_FULL.format(reason=exc.strerror)) from exc
        # A failed write has no file name to give (it is None, not worth showing).
        where = f": {exc.filename}" if exc.filename else ""
        raise StorageError(
            f"The memory file could not be accessed ({exc.strerror or exc}{where}); nothing was changed."
        ) from exc
