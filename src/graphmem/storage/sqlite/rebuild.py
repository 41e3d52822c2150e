"""Changing a table's constraints, which SQLite's ALTER TABLE cannot do: the table is made anew.

SQLite's own recipe (https://sqlite.org/lang_altertable.html#otheralter): create the new
table, copy the rows (keeping their ids), drop the old one, give the new one its name, and
make its indexes and triggers again from their saved definitions. The caller runs it inside
the migration's transaction with foreign keys off (dropping `entities` would otherwise
cascade to every observation).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["rebuild_table"]


def rebuild_table(conn: sqlite3.Connection, table: str, change: Callable[[str], str]) -> None:
    """Make `table` anew from `change(its CREATE TABLE statement)`, with its rows, ids, indexes
    and triggers. Columns the new statement adds take their defaults.

    Raises:
        ValueError: `change` did not change the statement (a migration that would do nothing).
    """
    (definition,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    changed = change(definition)
    if changed == definition:
        raise ValueError(f"the new definition of {table} is the old one")
    dependents = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL"
            " ORDER BY rowid",
            (table,),
        )
    ]
    # Stored columns only: generated ones are computed again by the new table (table_xinfo's
    # `hidden` is 0 for a plain column, 2 and 3 for generated ones).
    columns = ", ".join(
        f'"{name}"' for _, name, _, _, _, _, hidden in conn.execute(f'PRAGMA table_xinfo("{table}")') if hidden == 0
    )
    staging = f"{table}_rebuilt"
    conn.execute(changed.replace(f"CREATE TABLE {table}", f'CREATE TABLE "{staging}"', 1))
    conn.execute(f'INSERT INTO "{staging}" ({columns}) SELECT {columns} FROM "{table}"')
    conn.execute(f'DROP TABLE "{table}"')
    conn.execute(f'ALTER TABLE "{staging}" RENAME TO "{table}"')
    for sql in dependents:
        conn.execute(sql)
