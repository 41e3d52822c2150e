"""The PostgreSQL schema: its migration scripts, applied once per database by the first graphmem.

    open ─► BEGIN ─► pg_advisory_xact_lock(_MIGRATION_LOCK) ─► CREATE EXTENSION IF NOT EXISTS
          ─► read graphmem_schema ─► run the missing scripts ─► record them ─► COMMIT

Two servers starting at once: the second waits on the advisory lock, then finds the scripts
recorded and runs none. DDL is transactional in PostgreSQL, so a failed migration leaves nothing.
"""

from __future__ import annotations

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

from graphmem.core.errors import MemoryOpenError, SchemaVersionError, StorageError
from graphmem.storage.migration_scripts import migration_scripts

__all__ = ["SCHEMA_VERSION", "migrate"]

# Any constant 64-bit key, the same in every graphmem: "graphmem" in ASCII.
_MIGRATION_LOCK = 0x67726170686D656D

EXTENSIONS = ("pg_trgm",)
"""Extensions the schema needs: pg_trgm indexes the substring search."""


def _migrations() -> list[tuple[int, str]]:
    return migration_scripts("postgres")


SCHEMA_VERSION = max(number for number, _ in _migrations())


def _create_extensions(conn: psycopg.Connection[tuple[object, ...]], location: str) -> None:
    for extension in EXTENSIONS:
        installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (extension,)).fetchone()
        if installed is not None:
            continue
        try:
            with conn.transaction():  # a savepoint: a refusal leaves the migration's transaction usable
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension)))
        except (pg_errors.InsufficientPrivilege, pg_errors.FeatureNotSupported, pg_errors.UndefinedFile) as exc:
            raise StorageError(
                f"The database at {location} lacks the PostgreSQL extension {extension}, and this user may not "
                f"create it ({exc.diag.message_primary}). Ask the database's owner to run "
                f"`CREATE EXTENSION {extension};` in that database, then start graphmem again."
            ) from exc


def _refuse_a_foreign_schema(conn: psycopg.Connection[tuple[object, ...]], location: str) -> None:
    """graphmem makes its tables only where there is a memory already or nothing at all: a
    mistyped URL must not fill another application's database with them."""
    row = conn.execute(
        "SELECT to_regclass('graphmem_schema') IS NULL,"
        " (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())"
    ).fetchone()
    if row is not None and row[0] and int(row[1]):  # type: ignore[call-overload]
        raise MemoryOpenError(
            location,
            f"the database holds {row[1]} other tables and no graphmem memory",
            "Check the URL; a new memory needs an empty database, or a schema of its own "
            "(options=-csearch_path%3Dgraphmem in the URL, the schema created first).",
        )


def migrate(conn: psycopg.Connection[tuple[object, ...]], location: str) -> None:
    """Bring the database's schema up to `SCHEMA_VERSION`, inside one transaction.

    Raises:
        SchemaVersionError: a newer graphmem wrote the database.
        StorageError: an extension is missing and this user may not create it.
        MemoryOpenError: the database holds other tables and no memory.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        _refuse_a_foreign_schema(conn, location)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS graphmem_schema ("
            " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        row = conn.execute("SELECT coalesce(max(version), 0) FROM graphmem_schema").fetchone()
        current = int(row[0]) if row is not None else 0  # type: ignore[call-overload]
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{location} has schema version {current}, but this graphmem knows only up to "
                f"{SCHEMA_VERSION}; upgrade graphmem to open it."
            )
        pending = [(number, script) for number, script in _migrations() if number > current]
        if not pending:
            return
        _create_extensions(conn, location)
        for number, script in pending:
            # A script without parameters runs as one simple query: several statements at once.
            conn.execute(script.encode("utf-8"))
            conn.execute("INSERT INTO graphmem_schema (version) VALUES (%s)", (number,))
