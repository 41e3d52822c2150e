"""The SQLite schema: the migration scripts, and opening a file without writing to it."""

from __future__ import annotations

import errno
import os
import sqlite3
import urllib.parse
from pathlib import Path

from graphmem.core.errors import MemoryOpenError
from graphmem.storage.migration_scripts import migration_scripts


def _migrations() -> list[tuple[int, str]]:
    return migration_scripts("sqlite")


SCHEMA_VERSION = max(number for number, _ in _migrations())

# The tables every graphmem memory has had since its first schema (migration 0001).
_MEMORY_TABLES = ("entities", "observations", "relations")


def refuse_a_foreign_database(conn: sqlite3.Connection, location: str) -> None:
    """graphmem makes its tables only in a memory of its own or in a database with no tables
    at all: a mistyped path must not fill another application's database with them (issue 27,
    item 11; the PostgreSQL backend refuses the same, in postgres/schema.py).

    Raises:
        MemoryOpenError: the database holds other tables and no graphmem memory.
    """
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = {name for name in tables if not name.startswith("sqlite_")}
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if not tables or (version > 0 and tables.issuperset(_MEMORY_TABLES)):
        return
    raise MemoryOpenError(
        location,
        f"the database holds {len(tables)} other tables and no graphmem memory",
        "Check the path; a new memory needs a new or empty file (choose one with --memory-file or MEMORY_FILE_PATH).",
    )


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes: the file, its folder and any -wal or -shm stay as they are."""
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "No such file", str(path))
    address = f"file:{urllib.parse.quote(str(path.resolve()))}"
    connection = sqlite3.connect(f"{address}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    try:
        connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return connection
    except sqlite3.OperationalError:
        connection.close()
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise
    # A WAL database needs its -shm file, which a folder this user cannot write cannot
    # hold. With no -wal file (or an empty one) every committed page is in the database
    # itself, and nobody can be writing (no writer could create the -wal), so SQLite may
    # read it as an unchanging file.
    return sqlite3.connect(f"{address}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False)


def create_private_file(path: Path) -> None:
    """Create `path` (and its missing parent folders) readable by the owner only, if it is new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements; `sqlite3.complete_statement` keeps triggers whole."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if not buffer and line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
