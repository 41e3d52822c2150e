"""A word index of each project's own, which a search in that project ranks by.

FTS5's bm25() weighs each word of a query by the number of rows of the whole table holding
it, and counts them on every query by reading the word's whole list; a prefix query reads
the lists of every word it starts whole too. In one word index of a million entities, a
search in a project of two thousand therefore read a million entities' lists, however
narrowly the project's AND kept the rows (20 to 30 ms a query). So once a memory holds
projects, each scope has a word index of its own beside the memory's, holding what a search
in it sees:

    entity_words          every entity: a search across every project, and every search of
                          a memory without projects (which is all shared space)
    entity_words_p<N>     project N's entities (N: its `project_marks` id) and the shared
                          space's: a search in project N
    entity_words_shared   the shared space's: a search in the shared space alone, or in a
                          project that holds nothing yet

Each holds the same documents as `entity_words`, so a search in a scope reads and ranks as a
memory holding only what the scope sees would (BM25's statistics are the scope's). All are
kept by the same refresh (pending.refresh_words), in one transaction: whenever the memory's
index is up to date, so is each scope's. A scope's index is made the first time documents
are refreshed after its project appears, from the memory's. The price is disk: the shared
space's documents are held once more for it and once in each project's index.
"""

from __future__ import annotations

import re
import sqlite3

from graphmem.core.projects import Scope
from graphmem.storage.sqlite.scoping import WORDS, WordIndex, project_token, quoted, within_words

__all__ = ["drop_project_words", "project_word_tables", "refresh_project_words", "scope_word_tables", "word_index_of"]

_TABLE = re.compile(r"entity_words_p(\d+)")
_SHARED_TABLE = "entity_words_shared"

# As the memory's index (migration 17): the project column weighs nothing and is one word.
_CREATE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5 ("
    " name, aliases, entity_type, observations, project,"
    " tokenize = 'porter unicode61 remove_diacritics 2', prefix = '3')"
)
_COLUMNS = "name, aliases, entity_type, observations, project"
_W_COLUMNS = ", ".join(f"w.{column}" for column in _COLUMNS.split(", "))


def _table(mark_id: int) -> str:
    return f"entity_words_p{mark_id}"


def project_word_tables(conn: sqlite3.Connection) -> dict[int, str]:
    """The projects' word indexes there are, by their project's `project_marks` id."""
    names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'entity_words_p*'")
    return {int(match.group(1)): name for (name,) in names if (match := _TABLE.fullmatch(name))}


def scope_word_tables(conn: sqlite3.Connection) -> list[str]:
    """Every scope's own word index there is (not the memory's)."""
    return [*project_word_tables(conn).values(), *([_SHARED_TABLE] if _exists(conn, _SHARED_TABLE) else [])]


def refresh_project_words(conn: sqlite3.Connection, listed: str) -> None:
    """Bring the scopes' word indexes level with the memory's for the entities whose documents
    were just rebuilt there (`listed`, a JSON array of ids), inside the caller's write
    transaction: each document leaves every scope's index and comes back into those of the
    scopes that see it (a deleted entity comes back nowhere)."""
    tables = project_word_tables(conn)
    projects = dict(conn.execute("SELECT id, project FROM project_marks").fetchall())
    shared_exists = _exists(conn, _SHARED_TABLE)
    if projects and not shared_exists:
        _make(conn, _SHARED_TABLE)
        shared_exists = True
    for mark_id in projects:
        if mark_id not in tables:
            tables[mark_id] = _table(mark_id)
            _make(conn, tables[mark_id])
    seen_by = {table: projects.get(mark_id) for mark_id, table in tables.items()}
    if shared_exists:
        seen_by[_SHARED_TABLE] = ""
    for table, project in seen_by.items():
        conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))", (listed,))
        if project is None:
            continue  # a project deleted since: its index goes with drop_project_words
        conn.execute(
            # CROSS JOIN: from the listed ids, never a scan of the whole memory's index.
            f"INSERT INTO {table} (rowid, {_COLUMNS}) SELECT w.rowid, {_W_COLUMNS}"
            " FROM json_each(?) AS listed CROSS JOIN entities AS e ON e.id = listed.value"
            " CROSS JOIN entity_words AS w ON w.rowid = e.id"
            f" WHERE e.project IN ('', {quoted(project)})",
            (listed,),
        )


def _exists(conn: sqlite3.Connection, table: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is not None


def _make(conn: sqlite3.Connection, table: str) -> None:
    """A scope's new word index, holding the shared space's documents (which every scope sees)."""
    conn.execute(_CREATE.format(table=table))
    conn.execute(
        f"INSERT INTO {table} (rowid, {_COLUMNS})"
        f" SELECT rowid, {_COLUMNS} FROM entity_words WHERE entity_words MATCH ?",
        (f'project : "{project_token("")}"',),
    )


def drop_project_words(conn: sqlite3.Connection, project: str) -> None:
    """Forget a deleted project's mark and word index (inside the caller's write transaction,
    once its entities are gone), and the shared space's own index with the last project."""
    row = conn.execute("SELECT id FROM project_marks WHERE project = ?", (project,)).fetchone()
    if row is None:
        return
    conn.execute(f"DROP TABLE IF EXISTS {_table(row[0])}")
    conn.execute("DELETE FROM project_marks WHERE id = ?", (row[0],))
    if conn.execute("SELECT NOT EXISTS (SELECT 1 FROM project_marks)").fetchone()[0]:
        conn.execute(f"DROP TABLE IF EXISTS {_SHARED_TABLE}")


def word_index_of(conn: sqlite3.Connection, scope: Scope) -> WordIndex:
    """The word index a search in `scope` reads: the memory's for every project; else the
    scope's own (its project's, or the shared space's), or the memory's when the memory holds
    no project (all of it is the shared space). Only while a scope's index is not made yet (a
    reader that could not refresh the word index) is it the memory's, kept to the scope."""
    if scope.every:
        return WORDS
    project = scope.own_project
    if project is not None:
        row = conn.execute(
            "SELECT m.id FROM project_marks AS m JOIN sqlite_master AS t ON t.name = 'entity_words_p' || m.id"
            " WHERE m.project = ? AND t.type = 'table'",
            (project,),
        ).fetchone()
        if row is not None:
            return WordIndex(_table(row[0]))
    if _exists(conn, _SHARED_TABLE):
        return WordIndex(_SHARED_TABLE)
    return WordIndex(within=within_words(scope))
