"""Storage backends, the choice between them, and opening a memory for a long-running server."""

from __future__ import annotations

import sqlite3

from graphmem.config import Settings
from graphmem.core.errors import MemoryOpenError, SchemaVersionError, StorageBusyError, StorageError
from graphmem.storage.base import Store, describes_damage

__all__ = ["Store", "open_checked_store", "open_store"]

_CHOOSE_ANOTHER = "or choose another memory file with --memory-file or MEMORY_FILE_PATH"


_BACKGROUND_CACHE_KIB = 1024


def _open_postgres(url: str, location: str, *, read_only: bool) -> Store:
    """A PostgresStore, or one clear error when psycopg (an optional dependency) is missing."""
    try:
        from graphmem.storage.postgres import PostgresStore
    except ImportError as error:
        raise MemoryOpenError(
            location,
            f"the PostgreSQL driver is not installed ({error.name or error})",
            "Install it with: pip install 'graphmem[postgres]' (or uv tool install 'graphmem[postgres]').",
        ) from error
    return PostgresStore(url, location, read_only=read_only)


def open_store(
    settings: Settings, *, read_only: bool = False, background: bool = False, check_for_damage: bool = False
) -> Store:
    """Open the memory the settings name: PostgreSQL for a database URL, JSONL for
    `.jsonl`/`.json` files, SQLite otherwise.

    `read_only` opens an existing memory without writing anything, not even a lock file or
    SQLite's -shm file, so that one in a folder this user cannot write can be read.
    `background` opens a second connection for background work (the embedding worker):
    it keeps a small page cache, since it answers no reads that a cache would speed up, and
    its commits (vectors, derived from the memory) are not synced one by one.
    `check_for_damage` looks for damaged pages in a SQLite file, within a bounded time.
    """
    if settings.database_url is not None:
        return _open_postgres(settings.database_url, settings.location, read_only=read_only)
    if settings.backend == "jsonl":
        from graphmem.storage.jsonl import JsonlStore

        return JsonlStore(settings.memory_path, read_only=read_only)
    from graphmem.storage.sqlite import SQLiteStore

    return SQLiteStore(
        settings.memory_path,
        read_only=read_only,
        cache_kib=_BACKGROUND_CACHE_KIB if background else None,
        check_for_damage=check_for_damage,
        derived_only=background,
    )


def open_checked_store(settings: Settings, *, read_only: bool = False, check_for_damage: bool = True) -> Store:
    """Open the memory and read it once, so that a server finds out before it serves.

    A JSONL memory is read on first use, and a SQLite file that is not a database opens
    without complaint until its first statement; a server that found this out on its
    first call would leave its client waiting on a half-started session. A SQLite file with
    an intact header and damaged pages answers the first reads too: `check_for_damage`
    (on unless the caller means to read what is intact, as an export does) looks for them.

    Raises:
        MemoryOpenError: the memory cannot be opened or read; the message names the file,
            the cause and what to do, in one line.
        SchemaVersionError: a newer graphmem wrote the memory.
    """
    store: Store | None = None
    try:
        store = open_store(settings, read_only=read_only, check_for_damage=check_for_damage)
        with store.read():
            store.counts()
    except StorageError as error:
        if store is not None:
            store.close()
        if isinstance(error, SchemaVersionError | MemoryOpenError):
            raise
        if settings.database_url is not None:
            raise MemoryOpenError(
                settings.location, str(error).rstrip("."), "Check the database and its server's log."
            ) from error
        raise _open_error(settings.location, error) from error
    return store


def _open_error(location: str, error: StorageError) -> MemoryOpenError:
    """What went wrong opening the memory, from the driver or file error behind `error`."""
    cause = error.__cause__
    if isinstance(error, StorageBusyError):
        return MemoryOpenError(
            location,
            "another process kept it locked for too long",
            "Find the process holding it (another graphmem, an import, a backup tool) and retry.",
        )
    if isinstance(cause, PermissionError):
        where = f" on {cause.filename}" if cause.filename else ""
        return MemoryOpenError(
            location,
            f"permission denied{where}",
            f"Let this user write to that folder and file, {_CHOOSE_ANOTHER} in a folder you can write.",
        )
    if isinstance(cause, IsADirectoryError):
        return MemoryOpenError(location, "it is a folder", f"Give the path of a file in it, {_CHOOSE_ANOTHER}.")
    if isinstance(cause, FileExistsError | NotADirectoryError) and cause.filename:
        # mkdir of the missing folders met a file where a folder should be.
        return MemoryOpenError(
            location, f"{cause.filename} is a file, not a folder", f"Fix the path, {_CHOOSE_ANOTHER}."
        )
    if isinstance(cause, OSError):
        where = f" ({cause.filename})" if cause.filename else ""
        return MemoryOpenError(
            location,
            f"{(cause.strerror or str(cause)).lower()}{where}",
            f"Check the path and its folders, {_CHOOSE_ANOTHER}.",
        )
    if isinstance(cause, sqlite3.DatabaseError):
        message = str(cause)
        if "not a database" in message:
            return MemoryOpenError(
                location,
                "it is not a SQLite database",
                "A memory in the official JSONL format needs a .jsonl or .json name; otherwise move the file "
                f"away (graphmem starts a new memory there), {_CHOOSE_ANOTHER}.",
            )
        if describes_damage(message):
            return MemoryOpenError(
                location,
                f"the database is damaged ({message})",
                "Restore it from a backup, or save what can still be read with `graphmem export` and move it "
                f"away to start a new memory, {_CHOOSE_ANOTHER}.",
            )
        if "readonly" in message or "unable to open" in message:
            return MemoryOpenError(
                location,
                f"SQLite cannot write it ({message})",
                f"Let this user write to the file and its folder, {_CHOOSE_ANOTHER}.",
            )
        return MemoryOpenError(location, f"SQLite failed ({message})", f"Move the file away, {_CHOOSE_ANOTHER}.")
    return MemoryOpenError(location, str(error).rstrip("."), f"Move the file away, {_CHOOSE_ANOTHER}.")
