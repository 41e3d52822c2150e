"""JsonlStore: the drop-in backend that keeps memory in the official server's JSONL file.

The whole graph lives in memory, indexed by name, and the file is the truth:

    write():  flock(<file>.lock, EX) ─► re-read the file if it changed ─► run the block
              ─► rewrite the file atomically if anything changed ─► unlock
    read():   flock(<file>.lock, SH) ─► re-read the file if it changed ─► run the block

The rewrite goes to a temp file in the same folder (fsync'd, given the old file's mode,
0600 for a new one), is renamed over the file, and the folder is fsync'd, so a crash
leaves the old or the new file, never half of one. The file is written exactly as the
official server writes it: every entity line, then every relation line.

Lines graphmem does not understand are never lost:
- unknown keys on entity and relation lines ride in `Entity.extra` / `Relation.extra`;
- lines of another `type` (a fork's `{"type":"_aim",…}` marker, spec-003 observation
  records) are kept verbatim at their place among the entity lines, so they stay before
  every relation line (a file that mixes them in after relations gets them moved up);
- a line that cannot be read is skipped with a warning, and the file as it was is copied
  to `<file>.bak-<UTC time>` before the first rewrite that leaves such a line out.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import glob
import itertools
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.core.errors import ImportFormatError, StorageBusyError, StorageError
from graphmem.core.models import Entity, Relation
from graphmem.storage.base import AnalyticsRows, EntitySummary, FieldHits, StoreCounts, map_backend_errors
from graphmem.storage.entity_query import EntityQuery, answer_in_python
from graphmem.storage.files import fsync_directory
from graphmem.storage.jsonl.format import (
    EntityRecord,
    OtherRecord,
    RelationRecord,
    decode_line,
    encode_entity,
    encode_relation,
)
from graphmem.storage.words import (
    SearchHit,
    SearchResult,
    WordDocument,
    WordSearch,
    bm25_of,
    only_everywhere,
    term_frequencies,
)

__all__ = ["JsonlStore"]

# The name MCP clients see on logging notifications; it stayed when the module moved into a package.
logger = logging.getLogger("graphmem.storage.jsonl")

# How long a transaction waits for another process's lock before giving up; as long as
# SQLite's busy timeout, because an agent would rather wait than fail.
LOCK_TIMEOUT_SECONDS = 60.0

# Deleted rows stay as holes (so a rollback can put them back); past this many, and
# once they outnumber the live rows, the lists are rebuilt after a commit.
_COMPACT_AFTER = 1024

_TOKEN_SIZE = 16

_LEGACY_DETECTED = "DETECTED: Found legacy memory.json file, migrating to memory.jsonl for JSONL format compatibility"
_LEGACY_COMPLETED = "COMPLETED: Successfully migrated memory.json to memory.jsonl"

# Identifies a version of the file: (st_mtime_ns, st_size, st_ino), or None when it is absent.
_Stamp = tuple[int, int, int] | None


class _HeadRow:
    """An entity line or another line, held in memory with caches dropped when it changes."""

    __slots__ = ("folded", "line", "value", "words")

    def __init__(self, value: Entity | OtherRecord, line: str | None = None) -> None:
        self.value = value
        self.line = line
        """The encoded line, kept once it has been needed: most rows outlive many saves."""
        self.folded: str | None = None
        """For an entity: its lower-cased name, type and observations joined, so a text
        search rules most entities out with one substring test."""
        self.words: WordDocument | None = None
        """For an entity: its document in the word index, made when a search first needs it."""


class _RelationRow:
    """A relation line held in memory, with its encoded line once it has been needed."""

    __slots__ = ("line", "value")

    def __init__(self, value: Relation) -> None:
        self.value = value
        self.line: str | None = None


def _read_only_lock(lock_path: Path) -> int:
    """The lock file opened for reading (a shared lock needs no more); /dev/null when there is none.

    With no lock file beside it, no graphmem has written the memory from this folder, and
    none can (it could not create one): a lock on /dev/null, which nobody else takes
    exclusively, lets the reads go through the usual path.
    """
    try:
        return os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return os.open(os.devnull, os.O_RDONLY)


def _stamp_of(result: os.stat_result) -> tuple[int, int, int]:
    return (result.st_mtime_ns, result.st_size, result.st_ino)


def _fold(entity: Entity) -> str:
    # Joined with NUL: a match across two fields is only a false candidate, which the
    # exact per-field test then rejects; the blob narrows, it never decides.
    return "\0".join([entity.name.lower(), entity.entity_type.lower(), *(o.lower() for o in entity.observations)])


def _contains(entity: Entity, needle: str) -> bool:
    return (
        needle in entity.name.lower()
        or needle in entity.entity_type.lower()
        or any(needle in observation.lower() for observation in entity.observations)
    )


def _summary(entity: Entity, extra: dict[str, Any], degree: int) -> EntitySummary:
    def text(key: str) -> str | None:
        value = extra.get(key)
        return value if isinstance(value, str) else None

    version, importance = extra.get("version"), extra.get("importance")
    return EntitySummary(
        entity.name,
        entity.entity_type,
        text("createdAt"),
        text("updatedAt"),
        version if isinstance(version, int) and not isinstance(version, bool) else None,
        float(importance) if isinstance(importance, int | float) and not isinstance(importance, bool) else None,
        len(entity.observations),
        degree,
    )


def _ranked_counts(values: Iterable[str]) -> list[tuple[str, int]]:
    """Each value with how often it occurs, most common first, ties in value order."""
    return sorted(Counter(values).items(), key=lambda item: (-item[1], item[0]))


def _split_lines(data: bytes) -> list[str | None]:
    """The file's lines, with None for a line that is not valid UTF-8."""
    try:
        lines: list[str | None] = [*data.decode("utf-8").split("\n")]
    except UnicodeDecodeError:
        # Decode line by line, so bad bytes cost only the line they are on.
        lines = []
        for chunk in data.split(b"\n"):
            try:
                lines.append(chunk.decode("utf-8"))
            except UnicodeDecodeError:
                lines.append(None)
    first = lines[0]
    if first is not None and first.startswith("\ufeff"):
        # A byte-order mark from a Windows editor is not part of the first record.
        lines[0] = first[1:]
    return lines


def _migrate_legacy_file(path: Path) -> None:
    """Rename `memory.json` to `memory.jsonl` as the official server does at startup."""
    if path.suffix.lower() != ".jsonl" or path.exists():
        return
    legacy = path.with_suffix(".json")
    if not legacy.is_file():
        return
    # These two lines are the official server's, word for word: people grep their logs for them.
    print(_LEGACY_DETECTED, file=sys.stderr, flush=True)
    try:
        os.rename(legacy, path)
    except FileNotFoundError:
        # Another process starting at the same moment migrated it first.
        if not path.exists():
            raise
    print(_LEGACY_COMPLETED, file=sys.stderr, flush=True)


class JsonlStore:
    """A `Store` over one JSONL memory file, shared safely with other graphmem processes.

    Args:
        path: the memory file; missing parent folders are created. A `.jsonl` path that
            does not exist next to a `.json` file of the same name takes that file over,
            as the official server does.
    """

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.location = str(path)
        configured = Path(path)
        with map_backend_errors():
            if read_only:
                self._path = Path(os.path.realpath(configured))
                if not self._path.is_file():
                    raise FileNotFoundError(errno.ENOENT, "No such file", str(configured))
                self._lock_fd = _read_only_lock(self._path.with_name(self._path.name + ".lock"))
            else:
                configured.parent.mkdir(parents=True, exist_ok=True)
                # Write through a symlink to the real file: replacing the link would cut it.
                self._path = Path(os.path.realpath(configured))
                lock_path = self._path.with_name(self._path.name + ".lock")
                self._lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                if not read_only:
                    # Under the lock, so two servers starting together do not both rename.
                    self._flock(fcntl.LOCK_EX)
                    try:
                        _migrate_legacy_file(configured)
                        self._remove_stale_temporaries()
                    finally:
                        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            except BaseException:
                os.close(self._lock_fd)
                raise
        self._mutex = threading.RLock()
        self._lock_wait = LOCK_TIMEOUT_SECONDS
        self._writes = 0
        """Write transactions this store committed (see `committed_writes`)."""
        self._depth = 0
        self._writing = False
        self._closed = False
        self._loaded = False
        self._stamp: _Stamp = None
        self._token = b""
        self._bad_lines: list[int] = []
        self._told_about_fork_observations = False
        self._reset()

    def _remove_stale_temporaries(self) -> None:
        # A writer killed between creating its temporary file and the rename leaves it
        # behind. Under the exclusive lock nobody is writing, so every one found is stale.
        for stale in self._path.parent.glob(f".{glob.escape(self._path.name)}.*.tmp"):
            with suppress(FileNotFoundError):
                stale.unlink()

    # -- the in-memory graph ----------------------------------------------------

    def _reset(self) -> None:
        # `_head` holds entity lines and other lines in file order, `_relations` the
        # relation lines; a deleted row becomes None. The dicts map a name or a key to
        # the positions of its rows (dead ones included, skipped on use), so a point
        # operation never scans the lists.
        self._head: list[_HeadRow | None] = []
        self._relations: list[_RelationRow | None] = []
        self._by_name: dict[str, list[int]] = {}
        self._by_key: dict[tuple[str, str, str], list[int]] = {}
        self._by_endpoint: dict[str, list[int]] = {}
        self._dead_head = 0
        self._dead_relations = 0
        self._alias_index: dict[str, str] | None = None
        self._clear_journal()

    def _clear_journal(self) -> None:
        # What one write transaction changed, so a rollback can undo it: the rows it
        # replaced or deleted, and the list lengths and hole counts at its start.
        self._head_journal: list[tuple[int, _HeadRow | None]] = []
        self._relation_journal: list[tuple[int, _RelationRow | None]] = []
        self._mark = (len(self._head), len(self._relations), self._dead_head, self._dead_relations)

    def _add_head(self, row: _HeadRow) -> None:
        position = len(self._head)
        self._head.append(row)
        self._alias_index = None
        if isinstance(row.value, Entity):
            self._by_name.setdefault(row.value.name, []).append(position)

    def _add_relation(self, row: _RelationRow) -> None:
        relation = row.value
        position = len(self._relations)
        self._relations.append(row)
        self._by_key.setdefault(relation.key, []).append(position)
        self._by_endpoint.setdefault(relation.from_, []).append(position)
        if relation.to != relation.from_:
            self._by_endpoint.setdefault(relation.to, []).append(position)

    def _set_head(self, position: int, row: _HeadRow | None) -> None:
        self._head_journal.append((position, self._head[position]))
        self._head[position] = row
        self._alias_index = None
        self._dead_head += row is None

    def _delete_relation(self, position: int) -> None:
        self._relation_journal.append((position, self._relations[position]))
        self._relations[position] = None
        self._dead_relations += 1

    def _entity_positions(self, name: str) -> list[int]:
        return [p for p in self._by_name.get(name, ()) if self._holds(p, name)]

    def _holds(self, position: int, name: str) -> bool:
        # `_by_name` entries are hints: a rename (or its rollback) leaves the other name's
        # entry in place, so each is checked against the row it points at.
        row = self._head[position]
        return row is not None and isinstance(row.value, Entity) and row.value.name == name

    def _first_entity(self, name: str) -> tuple[int, Entity] | None:
        # Duplicate names in a file are all kept; like the official `find()`, point
        # operations act on the first.
        for position in self._by_name.get(name, ()):
            if self._holds(position, name):
                row = self._head[position]
                assert row is not None and isinstance(row.value, Entity)
                return position, row.value
        return None

    def _live_relations(self, positions: Iterable[int]) -> list[int]:
        return [p for p in positions if self._relations[p] is not None]

    def _rollback(self) -> None:
        """Put the in-memory graph back as it was when the transaction began."""
        self._alias_index = None
        for position, old_head in reversed(self._head_journal):
            self._head[position] = old_head
        for position, old_relation in reversed(self._relation_journal):
            self._relations[position] = old_relation
        head_length, relations_length, self._dead_head, self._dead_relations = self._mark
        # Rows appended by the transaction are live again now; drop them and their index
        # entries, which are the last ones of their lists.
        while len(self._head) > head_length:
            row = self._head.pop()
            if row is not None and isinstance(row.value, Entity):
                self._by_name[row.value.name].remove(len(self._head))
        while len(self._relations) > relations_length:
            relation_row = self._relations.pop()
            if relation_row is not None:
                relation = relation_row.value
                self._by_key[relation.key].pop()
                self._by_endpoint[relation.from_].pop()
                if relation.to != relation.from_:
                    self._by_endpoint[relation.to].pop()
        self._clear_journal()

    def _compact(self) -> None:
        head = [row for row in self._head if row is not None]
        relations = [row for row in self._relations if row is not None]
        self._reset()
        for row in head:
            self._add_head(row)
        for relation_row in relations:
            self._add_relation(relation_row)
        self._clear_journal()

    # -- the file ---------------------------------------------------------------

    def _flock(self, operation: int, wait: float = LOCK_TIMEOUT_SECONDS) -> None:
        # Polling instead of a blocking flock, so a process that never lets go gives a
        # clear error after a while instead of hanging every call forever.
        deadline = time.monotonic() + wait
        pause = 0.001
        while True:
            try:
                fcntl.flock(self._lock_fd, operation | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StorageBusyError(
                        f"The memory file {self.location} stayed locked by another process; nothing was "
                        "changed. Retry the call."
                    ) from None
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 2, 0.05)

    def _shared_lock_or_snapshot(self) -> bool:
        """Take the shared lock for a read; False when a writer holds the file past the wait.

        A read need not wait for another process's write: every writer replaces the
        file whole (a temporary file renamed over it), so the file there is always a
        complete memory, and reading it without the lock sees either the state before
        that write or after it, as a SQLite reader in WAL mode does.
        """
        try:
            self._flock(fcntl.LOCK_SH, self._lock_wait)
        except StorageBusyError:
            return False
        return True

    def _refresh(self) -> None:
        """Read the file again if anyone changed it since we last read or wrote it."""
        try:
            stamp: _Stamp = _stamp_of(os.stat(self._path))
        except FileNotFoundError:
            stamp = None
        # Every graphmem writer leaves a fresh token in the lock file. It catches a
        # rewrite that the stamp alone could miss: same size, a reused inode number and
        # an mtime within one tick of the file system's clock.
        token = os.pread(self._lock_fd, _TOKEN_SIZE, 0)
        if self._loaded and stamp == self._stamp and token == self._token:
            return
        self._load()
        self._token = token

    def _load(self) -> None:
        self._loaded = False
        self._reset()
        self._bad_lines = []
        try:
            with open(self._path, "rb") as file:
                # The stamp from before reading: a change made while we read (by a writer
                # that takes no lock) shows as a new stamp next time, and we read again.
                self._stamp = _stamp_of(os.fstat(file.fileno()))
                data = file.read()
        except FileNotFoundError:
            self._stamp = None
            data = b""
        # A load makes a few objects per line and no cycles; the cyclic collector would
        # walk the growing graph again and again (a third of the time on 160,000 lines).
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._parse(data)
        finally:
            if collecting:
                gc.enable()
        self._clear_journal()
        self._loaded = True

    def _parse(self, data: bytes) -> None:
        fork_observations = 0
        for line_no, line in enumerate(_split_lines(data), start=1):
            try:
                if line is None:
                    raise ImportFormatError(line_no, "not valid UTF-8.")
                record = decode_line(line, line_no)
            except ImportFormatError as exc:
                self._bad_lines.append(line_no)
                logger.warning("%s line %d is skipped: %s", self.location, line_no, exc.reason)
                continue
            if isinstance(record, EntityRecord):
                self._add_head(_HeadRow(record.entity))
            elif isinstance(record, RelationRecord):
                self._add_relation(_RelationRow(record.relation))
            elif isinstance(record, OtherRecord):
                self._add_head(_HeadRow(record, record.line))
                fork_observations += record.kind == "observation"
        if fork_observations and not self._told_about_fork_observations:
            self._told_about_fork_observations = True
            logger.warning(
                "%s holds %d observation line(s) in the spec-003 fork format: they are kept in the file "
                "but the tools do not show them. To use them, import the file into a graphmem memory: "
                "graphmem import %s",
                self.location,
                fork_observations,
                self.location,
            )

    def _back_up(self) -> None:
        """Copy the file as it is, before a rewrite leaves out the lines that could not be read."""
        when = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        backup = self._path.with_name(f"{self._path.name}.bak-{when}")
        attempt = 1
        while True:
            try:
                fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                break
            except FileExistsError:
                attempt += 1
                backup = self._path.with_name(f"{self._path.name}.bak-{when}-{attempt}")
        with os.fdopen(fd, "wb") as target, open(self._path, "rb") as source:
            shutil.copyfileobj(source, target)
            target.flush()
            os.fsync(target.fileno())
        fsync_directory(self._path.parent)
        logger.warning(
            "%s: unreadable line(s) %s are left out when the file is rewritten; the file as it was is kept in %s",
            self.location,
            ", ".join(map(str, self._bad_lines)),
            backup,
        )
        self._bad_lines = []

    def _encoded_lines(self) -> list[str]:
        lines: list[str] = []
        for row in self._head:
            if row is not None:
                if row.line is None:
                    assert isinstance(row.value, Entity)  # other lines always carry their text
                    row.line = encode_entity(row.value)
                lines.append(row.line)
        for relation_row in self._relations:
            if relation_row is not None:
                if relation_row.line is None:
                    relation_row.line = encode_relation(relation_row.value)
                lines.append(relation_row.line)
        return lines

    def _save(self) -> None:
        if self._bad_lines:
            self._back_up()
        lines = self._encoded_lines()
        # The official layout: lines joined by "\n", with the trailing "\n" of upstream
        # main (the 2026.8.31 loader accepts it); an empty graph is an empty file.
        data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
        try:
            mode = stat.S_IMODE(os.stat(self._path).st_mode)
        except FileNotFoundError:
            mode = 0o600
        fd, temp_name = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".tmp", dir=self._path.parent)
        try:
            with os.fdopen(fd, "wb") as temp:
                # The rename replaces the inode, so the mode must be carried over by hand.
                os.fchmod(temp.fileno(), mode)
                temp.write(data)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, self._path)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp_name)
            raise
        fsync_directory(self._path.parent)
        self._token = os.urandom(_TOKEN_SIZE)
        os.pwrite(self._lock_fd, self._token, 0)
        self._stamp = _stamp_of(os.stat(self._path))

    # -- transactions -----------------------------------------------------------

    @contextmanager
    def _transaction(self, writing: bool) -> Iterator[None]:
        with self._mutex:
            if self._closed:
                raise StorageError(f"The memory file {self.location} is closed; nothing was changed.")
            if self._depth:
                if writing and not self._writing:
                    raise RuntimeError("write() cannot start inside read(); open the write first.")
                # Already inside a transaction on this store: join it.
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            with map_backend_errors():
                if writing:
                    self._flock(fcntl.LOCK_EX, self._lock_wait)
                    locked = True
                else:
                    locked = self._shared_lock_or_snapshot()
            try:
                self._depth, self._writing = 1, writing
                with map_backend_errors():
                    self._refresh()
                self._clear_journal()
                try:
                    # The caller's block works on memory only; its own errors pass as they are.
                    yield
                except BaseException:
                    self._rollback()
                    raise
                if writing and self._changed():
                    try:
                        with map_backend_errors():
                            self._save()
                        self._writes += 1
                    except BaseException:
                        self._rollback()
                        # The save may have got as far as replacing the file (and failed
                        # on the folder's fsync, say): believe the disk, not the cache.
                        self._loaded = False
                        raise
                self._clear_journal()
                if self._dead_head + self._dead_relations > _COMPACT_AFTER and (
                    self._dead_head * 2 > len(self._head) or self._dead_relations * 2 > len(self._relations)
                ):
                    self._compact()
            finally:
                self._depth, self._writing = 0, False
                if locked:
                    with map_backend_errors():
                        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _changed(self) -> bool:
        return bool(self._head_journal or self._relation_journal) or (
            (len(self._head), len(self._relations)) != self._mark[:2]
        )

    def write(self) -> AbstractContextManager[None]:
        return self._transaction(writing=True)

    def read(self) -> AbstractContextManager[None]:
        return self._transaction(writing=False)

    def bulk_insert(self) -> AbstractContextManager[None]:
        # The file is written once per transaction already.
        return nullcontext()

    def size_on_disk(self) -> int:
        try:
            return os.stat(self._path).st_size
        except FileNotFoundError:
            return 0

    def compact(self) -> None:
        # Every write rewrites the whole file, so it never holds deleted lines; only the
        # in-memory lists keep holes, which this drops.
        with self.write():
            self._compact()

    def close(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            self._loaded = False
            self._reset()
            with map_backend_errors():
                os.close(self._lock_fd)

    # -- reads ------------------------------------------------------------------

    def existing_names(self, names: Sequence[str]) -> set[str]:
        return {name for name in names if self._first_entity(name) is not None}

    def resolve_names(self, names: Sequence[str]) -> dict[str, str]:
        resolved = {name: name for name in names if self._first_entity(name) is not None}
        others = [name for name in names if name not in resolved]
        if others:
            if self._alias_index is None:
                # Built when an alias is first looked up after a change: names that are
                # entities (the usual case) never pay for it.
                self._alias_index = {}
                for entity in self.iter_entities():
                    for alias in entity.aliases:
                        self._alias_index.setdefault(alias, entity.name)
            resolved.update({name: self._alias_index[name] for name in others if name in self._alias_index})
        return resolved

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        positions = sorted({p for name in set(names) for p in self._entity_positions(name)})
        return [row.value for p in positions if (row := self._head[p]) is not None and isinstance(row.value, Entity)]

    def iter_entities(self) -> Iterator[Entity]:
        for row in self._head:
            if row is not None and isinstance(row.value, Entity):
                yield row.value

    def iter_relations(self) -> Iterator[Relation]:
        for row in self._relations:
            if row is not None:
                yield row.value

    def integrity_problems(self) -> list[str]:
        with self.read():
            return [f"line {line_no} cannot be read and is left out" for line_no in self._bad_lines]

    def wait_for_locks(self, seconds: float) -> None:
        self._lock_wait = max(0.0, seconds)

    def committed_writes(self) -> int:
        return self._writes

    def time_limit(self, seconds: float) -> AbstractContextManager[None]:
        # Every call works on the graph held in memory, in Python, and cannot be stopped
        # midway; the longest (a search) reads each entity once.
        return nullcontext()

    def version(self) -> tuple[_Stamp, bytes] | None:
        # What `_refresh` compares to know whether to read the file again: every write
        # replaces the file (a new stamp) and every graphmem writer leaves a new token.
        # Read without the file lock: a writer halfway through gives a version whose
        # answer is read after it finishes, so at worst the next call reads again.
        with self._mutex:
            if self._depth or self._closed:
                return None
            with map_backend_errors():
                try:
                    stamp: _Stamp = _stamp_of(os.stat(self._path))
                except FileNotFoundError:
                    stamp = None
                return (stamp, os.pread(self._lock_fd, _TOKEN_SIZE, 0))

    def official_graph(self, at_most: int) -> dict[str, list[dict[str, Any]]] | None:
        # Stop at the first entity past the limit: a large memory is never written out here.
        entities = [entity.to_wire() for entity in itertools.islice(self.iter_entities(), at_most + 1)]
        if len(entities) > at_most:
            return None
        return {"entities": entities, "relations": [relation.to_wire() for relation in self.iter_relations()]}

    def page_entities(self, entity_type: str | None, offset: int, limit: int | None) -> tuple[list[Entity], int]:
        matching = [e for e in self.iter_entities() if entity_type is None or e.entity_type == entity_type]
        page = matching[offset:] if limit is None else matching[offset : offset + limit]
        return page, len(matching)

    def query_entities(self, query: EntityQuery) -> tuple[list[Entity], int]:
        # No index: the file is in memory, and a look-up reads it once.
        return answer_in_python(self.iter_entities(), self.iter_relations(), query)

    def relations_touching(self, names: Sequence[str]) -> list[Relation]:
        positions = {p for name in set(names) for p in self._by_endpoint.get(name, ())}
        return [row.value for p in sorted(positions) if (row := self._relations[p]) is not None]

    def relation_keys_touching(self, names: Sequence[str]) -> list[tuple[str, str, str]]:
        return [relation.key for relation in self.relations_touching(names)]

    def existing_relations(self, keys: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        return {key for key in keys if self._live_relations(self._by_key.get(key, ()))}

    def observations_of(self, name: str) -> list[str] | None:
        found = self._first_entity(name)
        return None if found is None else list(found[1].observations)

    def find_text(self, needle: str) -> dict[str, FieldHits]:
        hits: dict[str, FieldHits] = {}
        for position, row in enumerate(self._head):
            if row is None or not isinstance(row.value, Entity):
                continue
            if row.folded is None:
                row.folded = _fold(row.value)
            if needle not in row.folded:
                continue
            entity = row.value
            in_name = needle in entity.name.lower()
            in_type = needle in entity.entity_type.lower()
            count = sum(needle in observation.lower() for observation in entity.observations)
            if not (in_name or in_type or count):
                continue
            order = position
            previous = hits.get(entity.name)
            if previous is not None:
                # Entities sharing a name (kept from a file) answer as one, at the first's place.
                in_type = in_type or previous.in_type
                count += previous.observation_hits
                order = previous.order
            hits[entity.name] = FieldHits(in_name, in_type, count, order)
        return hits

    # -- ranked search (issue 3, part 1) ---------------------------------------------------

    def search_entities(self, search: WordSearch) -> SearchResult:
        # The word index is every entity row, whatever the type filter, as in FTS5.
        rows: list[tuple[int, _HeadRow, Entity]] = []
        documents: list[WordDocument] = []
        for position, row in enumerate(self._head):
            if row is not None and isinstance(row.value, Entity):
                entity = row.value
                if row.words is None:
                    row.words = WordDocument(entity.name, list(entity.aliases), entity.entity_type, entity.observations)
                rows.append((position, row, entity))
                documents.append(row.words)
        frequencies = term_frequencies(documents, search.terms, search.weights)
        everywhere = only_everywhere(frequencies, len(documents))
        scores = bm25_of(documents, frequencies)
        best: dict[str, tuple[bool, float, int]] = {}
        for index, (position, row, entity) in enumerate(rows):
            if search.entity_type is not None and entity.entity_type != search.entity_type:
                continue
            if row.folded is None:
                row.folded = _fold(entity)
            official = any(needle in row.folded and _contains(entity, needle) for needle in search.needles)
            score = scores.get(index, 0.0)
            if not official and not score:
                continue
            previous = best.get(entity.name)
            if previous is not None:
                # Entities sharing a name (kept from a file) rank as one, where the first match is.
                official, score, position = official or previous[0], max(score, previous[1]), previous[2]
            best[entity.name] = (official, score, position)
        ordered = sorted(best.items(), key=lambda item: (not item[1][0], -item[1][1], item[1][2]))
        hits = [SearchHit(name, official, score) for name, (official, score, _) in ordered]
        if everywhere and hits and hits[0].official:
            # As in SQLite: words found everywhere neither order the whole-query matches
            # (creation order does) nor add entities to them.
            official_hits = sorted((item for item in best.items() if item[1][0]), key=lambda item: item[1][2])
            hits = [SearchHit(name, True, 0.0) for name, _ in official_hits]
        if search.limit is not None:
            page = hits[search.offset : search.offset + search.limit]
        else:
            official_count = sum(hit.official for hit in hits)
            page = hits[: official_count + search.max_word_matches][search.offset :]
        return SearchResult(page[: search.named_at_most], len(page))

    # -- end of ranked search --------------------------------------------------------------

    def counts(self) -> StoreCounts:
        entities = observations = 0
        for entity in self.iter_entities():
            entities += 1
            observations += len(entity.observations)
        return StoreCounts(entities, len(self._relations) - self._dead_relations, observations)

    # -- navigation (issue 3, parts 3 and 4) -----------------------------------------------

    def entity_type_counts(self) -> list[tuple[str, int]]:
        return _ranked_counts(entity.entity_type for entity in self.iter_entities())

    def relation_type_counts(self) -> list[tuple[str, int]]:
        return _ranked_counts(relation.relation_type for relation in self.iter_relations())

    def find_relations(
        self, from_: str | None, to: str | None, relation_type: str | None, offset: int, limit: int | None
    ) -> tuple[list[Relation], int]:
        if from_ is not None:
            candidates: Iterable[Relation] = self.relations_touching([from_])
        elif to is not None:
            candidates = self.relations_touching([to])
        else:
            candidates = self.iter_relations()
        matching = [
            relation
            for relation in candidates
            if (from_ is None or relation.from_ == from_)
            and (to is None or relation.to == to)
            and (relation_type is None or relation.relation_type == relation_type)
        ]
        page = matching[offset:] if limit is None else matching[offset : offset + limit]
        return page, len(matching)

    def analytics(self, thread_id: str | None, limit: int) -> AnalyticsRows:
        degree: Counter[str] = Counter()
        for relation in self.iter_relations():
            degree[relation.from_] += 1
            if relation.to != relation.from_:
                degree[relation.to] += 1
        names = set()
        summaries: list[EntitySummary] = []
        for entity in self.iter_entities():
            names.add(entity.name)
            extra = entity.extra or {}
            if thread_id is not None and extra.get("threadId") != thread_id:
                continue
            summaries.append(_summary(entity, extra, degree[entity.name]))
        order = {summary.name: index for index, summary in enumerate(summaries)}
        recent = sorted(summaries, key=lambda s: (s.updated_at is not None, s.updated_at or "", order[s.name]))
        recent.reverse()
        important = sorted(summaries, key=lambda s: (s.importance is not None, s.importance or 0.0, order[s.name]))
        important.reverse()
        # Ties as SQLite walks its indexes backwards: the later name first.
        connected = sorted((s for s in summaries if s.degree), key=lambda s: (s.degree, s.name), reverse=True)
        unconnected = [s for s in summaries if not s.degree]
        dangling = sorted(name for name in degree if name not in names)
        return AnalyticsRows(
            recent[:limit],
            important[:limit],
            connected[:limit],
            unconnected[:limit],
            len(unconnected),
            dangling[:limit],
            len(dangling),
        )

    # -- end of navigation -----------------------------------------------------------------

    # -- writes -----------------------------------------------------------------

    def _check_writing(self) -> None:
        if not self._writing:
            raise RuntimeError("JsonlStore changes must happen inside write().")

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        self._check_writing()
        for entity in entities:
            self._add_head(_HeadRow(entity))

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        self._check_writing()
        for relation in relations:
            self._add_relation(_RelationRow(relation))

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        self._check_writing()
        found = self._first_entity(name)
        if found is None or not contents:
            return
        position, entity = found
        grown = Entity(entity.name, entity.entity_type, entity.observations + tuple(contents), entity.extra)
        self._set_head(position, _HeadRow(grown))

    def update_entity(self, name: str, changed: Entity) -> None:
        self._check_writing()
        found = self._first_entity(name)
        if found is None:
            return
        position, entity = found
        self._set_head(
            position, _HeadRow(Entity(changed.name, changed.entity_type, entity.observations, changed.extra))
        )
        if changed.name != name:
            self._by_name.setdefault(changed.name, []).append(position)

    def delete_entities(self, names: Sequence[str]) -> int:
        self._check_writing()
        deleted = 0
        for name in dict.fromkeys(names):
            positions = self._entity_positions(name)
            for position in positions:
                self._set_head(position, None)
            deleted += bool(positions)
            # Relations go even when the entity never existed: the official server
            # deletes dangling relations by name too.
            for position in self._live_relations(self._by_endpoint.get(name, ())):
                self._delete_relation(position)
        return deleted

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        self._check_writing()
        found = self._first_entity(name)
        if found is None:
            return 0
        position, entity = found
        present = set(contents).intersection(entity.observations)
        if present:
            kept = tuple(o for o in entity.observations if o not in present)
            self._set_head(position, _HeadRow(Entity(entity.name, entity.entity_type, kept, entity.extra)))
        return len(present)

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        self._check_writing()
        deleted = 0
        for key in dict.fromkeys(keys):
            positions = self._live_relations(self._by_key.get(key, ()))
            for position in positions:
                self._delete_relation(position)
            deleted += bool(positions)
        return deleted
