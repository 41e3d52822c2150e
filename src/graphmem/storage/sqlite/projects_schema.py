"""Migration 17, the part SQL cannot say: `entities` and `relations` made anew with a project.

Before it, a name was unique in the memory and a relation's key was (from, to, type); after
it, both are unique within their project ('' is the shared space, where every existing row
goes). The project comes last in each UNIQUE constraint so that the index it makes still
serves every look-up by name, or by a relation's source, whatever the scope.
"""

from __future__ import annotations

import re
import sqlite3

from graphmem.storage.sqlite.rebuild import rebuild_table

__all__ = ["MIGRATION", "give_tables_projects"]

MIGRATION = 17
"""The migration whose SQL (0017_projects.sql) runs after this."""

_PROJECT_COLUMN = "project TEXT NOT NULL DEFAULT ''"


def _entities(definition: str) -> str:
    without_unique = re.sub(r"(\bname\s+TEXT NOT NULL) UNIQUE", r"\1", definition, count=1)
    return _add_before_close(without_unique, f"{_PROJECT_COLUMN}, UNIQUE (name, project)")


def _relations(definition: str) -> str:
    return re.sub(
        r"UNIQUE \(from_name, to_name, relation_type\)",
        f"{_PROJECT_COLUMN},\n    UNIQUE (from_name, to_name, relation_type, project)",
        definition,
        count=1,
    )


def _add_before_close(definition: str, addition: str) -> str:
    """`definition` with `addition` as the last item of its column list."""
    closing = definition.rstrip().rstrip(";")
    assert closing.endswith(")"), definition
    return f"{closing[:-1]}, {addition})"


def give_tables_projects(conn: sqlite3.Connection) -> None:
    """Inside the migration's transaction, with foreign keys off. A table that has its project
    already is left as it is, so the migration may run again."""
    for table, change in (("entities", _entities), ("relations", _relations)):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_xinfo({table})")}
        if "project" not in columns:
            rebuild_table(conn, table, change)
