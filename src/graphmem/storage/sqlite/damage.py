"""The check for damaged pages a SQLite memory gets before a server serves it (issue 27, item 12).

A file whose header is intact and whose pages are damaged opens, and answers the first
reads (the counts) as if nothing were wrong; only the calls that read a damaged page fail.
SQLite's quick check finds the damage, but reads every page to do it, in one step that
cannot be stopped midway: 2.3 s (10.6 s from a cold disk) on a memory of 1,000,000 entities
(5 GB). So the check is bounded:

    every table: its first and its last rows  ─►  the root and the edge pages the first reads touch
    a file of at most QUICK_CHECK_BYTES       ─►  and SQLite's whole quick check (0.1 s at 16 MB)

A larger memory's other pages are left to the calls that read them, each of which then says
that the memory is damaged and what to do (`map_driver_errors`).
"""

from __future__ import annotations

import sqlite3

__all__ = ["QUICK_CHECK_BYTES", "check_for_damage"]

QUICK_CHECK_BYTES = 32 * 1024 * 1024
"""Files up to this size get SQLite's whole quick check (about 180 MB a second here: 0.2 s)."""

# Rows read at each end of each table: enough to walk from the root down to a leaf page and
# along a few of them.
_EDGE_ROWS = 64


def check_for_damage(conn: sqlite3.Connection, file_bytes: int) -> None:
    """Read what the bounded check reads (see the module's docstring).

    Raises:
        sqlite3.DatabaseError: "database disk image is malformed", with what the quick check
            found when it was the quick check that found it.
    """
    tables = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND sql NOT LIKE 'CREATE VIRTUAL%'"
    ).fetchall()
    for name, sql in tables:
        quoted = '"' + name.replace('"', '""') + '"'
        conn.execute(f"SELECT * FROM {quoted} LIMIT {_EDGE_ROWS}").fetchall()
        if "WITHOUT ROWID" not in sql.upper():
            conn.execute(f"SELECT * FROM {quoted} ORDER BY rowid DESC LIMIT {_EDGE_ROWS}").fetchall()
    if file_bytes <= QUICK_CHECK_BYTES:
        found = [row[0] for row in conn.execute("PRAGMA quick_check")]
        if found != ["ok"]:
            # The check's own report ("Page 12: btreeInitPage() returns error code 11", ...),
            # as the driver's error for damage, so that it is worded as every other one is.
            raise sqlite3.DatabaseError(f"database disk image is malformed: {' '.join(found[0].split())}")
