"""JsonlStore: the drop-in backend that keeps memory in the official server's JSONL file.

The whole graph lives in memory, indexed by name, and the file is the truth:

    write():  flock(<file>.lock, EX) ─► re-read the file if it changed ─► run the block
              ─► rewrite the file atomically if anything changed ─► unlock
    read():   flock(<file>.lock, SH) ─► re-read the file if it changed ─► run the block

Each transaction runs in a `Scope` (graphmem.core.projects), kept on the store while it runs:
the store's mutex is held for the whole transaction, so no other thread's call can run in
between, and a transaction opened inside it (the same thread, the mutex being reentrant)
joins it in its scope. Every entity and relation is in memory whatever its project; each
read and write keeps to the rows of the projects the scope sees.

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

This module opens the file, takes the lock, loads, saves and backs up the file and runs
the transactions; the class takes its reads and searches from reads.py, its writes from
writes.py, and the in-memory rows, their indexes and the journal from tables.py.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import glob
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.core.changes import ChangeFilter, ChangePage, NewChange
from graphmem.core.errors import ImportFormatError, StorageBusyError, StorageError
from graphmem.core.models import Entity
from graphmem.core.projects import EVERY, Scope
from graphmem.core.validity import Validity
from graphmem.storage.base import map_backend_errors
from graphmem.storage.files import fsync_directory
from graphmem.storage.jsonl.changes import ChangeFile
from graphmem.storage.jsonl.format import (
    EntityRecord,
    OtherRecord,
    RelationRecord,
    decode_line,
    encode_entity,
    encode_relation,
)
from graphmem.storage.jsonl.projects import _Projects
from graphmem.storage.jsonl.tables import _COMPACT_AFTER, _HeadRow, _RelationRow
from graphmem.storage.jsonl.writes import _Writes

__all__ = ["JsonlStore"]

# The name MCP clients see on logging notifications; it stayed when the module moved into a package.
logger = logging.getLogger("graphmem.storage.jsonl")

# How long a transaction waits for another process's lock before giving up; as long as
# SQLite's busy timeout, because an agent would rather wait than fail.
LOCK_TIMEOUT_SECONDS = 60.0

_TOKEN_SIZE = 16

_LEGACY_DETECTED = "DETECTED: Found legacy memory.json file, migrating to memory.jsonl for JSONL format compatibility"
_LEGACY_COMPLETED = "COMPLETED: Successfully migrated memory.json to memory.jsonl"

# Identifies a version of the file: (st_mtime_ns, st_size, st_ino), or None when it is absent.
_Stamp = tuple[int, int, int] | None


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


class JsonlStore(_Writes, _Projects):
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
        self._scope = EVERY
        """The scope of the transaction in progress; EVERY between them."""
        self._closed = False
        self._loaded = False
        self._stamp: _Stamp = None
        self._token = b""
        self._bad_lines: list[int] = []
        self._told_about_fork_observations = False
        self._change_file = ChangeFile(self._path)
        self._fact_end_memo: tuple[bytes, str | None] | None = None
        self._new_changes: list[NewChange] = []
        """The changes of the write transaction in progress, appended once its file is saved."""
        self._reset()

    def _remove_stale_temporaries(self) -> None:
        # A writer killed between creating its temporary file and the rename leaves it
        # behind. Under the exclusive lock nobody is writing, so every one found is stale.
        for stale in self._path.parent.glob(f".{glob.escape(self._path.name)}.*.tmp"):
            with suppress(FileNotFoundError):
                stale.unlink()

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
    def _transaction(self, writing: bool, scope: Scope) -> Iterator[None]:
        with self._mutex:
            if self._closed:
                raise StorageError(f"The memory file {self.location} is closed; nothing was changed.")
            if self._depth:
                # Already inside a transaction on this store: join it, in its scope. EVERY is
                # what a caller that names no scope asks for (a helper inside the domain's call).
                # Or, inside a transaction of every project, in the narrower scope asked for.
                narrows = self._scope.every and not scope.every
                if scope != self._scope and scope != EVERY and not narrows:
                    raise ValueError(f"a transaction in {scope} cannot join one in {self._scope}")
                if writing and not self._writing:
                    raise RuntimeError("write() cannot start inside read(); open the write first.")
                outer = self._scope
                self._depth += 1
                if narrows:
                    self._scope = scope
                try:
                    yield
                finally:
                    self._depth -= 1
                    self._scope = outer
                return
            with map_backend_errors():
                if writing:
                    self._flock(fcntl.LOCK_EX, self._lock_wait)
                    locked = True
                else:
                    locked = self._shared_lock_or_snapshot()
            try:
                self._depth, self._writing, self._scope = 1, writing, scope
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
                self._append_changes()
                if self._dead_head + self._dead_relations > _COMPACT_AFTER and (
                    self._dead_head * 2 > len(self._head) or self._dead_relations * 2 > len(self._relations)
                ):
                    self._compact()
            finally:
                self._new_changes = []
                self._depth, self._writing, self._scope = 0, False, EVERY
                if locked:
                    with map_backend_errors():
                        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def write(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        return self._transaction(writing=True, scope=scope)

    def read(self, scope: Scope = EVERY) -> AbstractContextManager[None]:
        return self._transaction(writing=False, scope=scope)

    def _append_changes(self) -> None:
        """Append the saved transaction's changes to the log (changes.py); the memory is saved
        already, so a log that cannot be written costs a warning, not the write."""
        try:
            self._change_file.append(self._new_changes)
        except OSError as error:
            logger.warning("%s: the change log was not written (%s); the memory itself was.", self.location, error)

    def append_change(self, change: NewChange) -> None:
        self._new_changes.append(change)

    def forget_changes(self, before: str) -> int:
        return self._change_file.forget(before)

    def history_since(self) -> str | None:
        return self._change_file.history_since()

    def rewrite_changes(self, clean: Callable[[Any], Any]) -> int:
        # The log is beside the file, written whole: names and operations are in its lines.
        return self._change_file.rewrite(clean)

    def list_changes(self, where: ChangeFilter, limit: int) -> ChangePage:
        with self.read():
            return self._change_file.page(where, limit, self._scope)

    def entity_names(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        with self.read():
            return [
                (row.value.name, row.value.entity_type, row.value.project, row.value.aliases)
                for row in self._head
                if row is not None and isinstance(row.value, Entity)
            ]

    # -- valid time: read from the facts' records, which the file holds already ------------------

    def timed_entities(self) -> list[Entity]:
        with self.read():
            return [
                row.value
                for row in self._head
                if row is not None and isinstance(row.value, Entity) and _may_be_timed(row.value)
            ]

    def next_fact_end(self) -> str | None:
        # Derived from the records, once a version of the file (the token changes with each).
        with self.read():
            memo = self._fact_end_memo
            if memo is not None and memo[0] == self._token and not self._writing:
                return memo[1]
            ends = [
                end
                for row in self._head
                if row is not None and isinstance(row.value, Entity) and row.value.extra
                for meta in _metas(row.value.extra)
                if (end := Validity(None, meta.get("validUntil")).end) is not None
            ]
            found = min(ends, default=None)
            if not self._writing:
                self._fact_end_memo = (self._token, found)
            return found

    def set_next_fact_end(self, when: str | None) -> None:
        """Nothing to keep: the file's records say it (`next_fact_end`)."""

    def bulk_insert(self) -> AbstractContextManager[None]:
        # The file is written once per transaction already.
        return nullcontext()

    def size_on_disk(self) -> int:
        try:
            return os.stat(self._path).st_size
        except FileNotFoundError:
            return 0

    def compact(self, thorough: bool = False) -> None:
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

    # -- the file and its lock, as the Store contract asks ---------------------

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


def _metas(extra: dict[str, Any]) -> list[dict[str, Any]]:
    metas = extra.get("observationMeta")
    return [meta for meta in metas if isinstance(meta, dict)] if isinstance(metas, list) else []


def _may_be_timed(entity: Entity) -> bool:
    """A record with a bound, or a fact that starts with `[` (Store.timed_entities)."""
    extra = entity.extra or {}
    records = [*_metas(extra), *(item for item in extra.get("observationHistory") or () if isinstance(item, dict))]
    if any("validFrom" in record or "validUntil" in record for record in records):
        return True
    return any(content.lstrip()[:1] == "[" for content in entity.observations)
