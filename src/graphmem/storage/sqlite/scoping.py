"""A transaction's scope (graphmem.core.projects) as SQL: the rows of the projects it sees.

The project keys are written into the statement as quoted literals rather than bound as
parameters: the statements they join number their parameters in several ways (`?`, `?1`,
`:name`), and a key is a plain string the quoting makes safe. A scope that sees every
project adds nothing, so the statements of a memory without projects are those of before.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from graphmem.core.projects import SHARED, Scope

__all__ = [
    "ENTITY_MARK_SQL",
    "WORDS",
    "OBSERVATION_MARK_SQL",
    "PROJECT_TOKEN_SQL",
    "and_visible",
    "marks_of",
    "project_token",
    "quoted",
    "visible",
    "within_marks",
    "within_words",
    "WordIndex",
]

PROJECT_TOKEN_SQL = "'gp' || lower(hex({column})) || '0'"
"""`project_token` in SQL, for the word index's documents (storage/sqlite/pending.py)."""

ENTITY_MARK_SQL = "coalesce((SELECT mark FROM project_marks WHERE project = {entity}.project), '')"
"""The mark a row `{entity}` of `entities` is indexed after in the trigram index (migration 18):
its project's, or none in the shared space."""

OBSERVATION_MARK_SQL = (
    "coalesce((SELECT m.mark FROM entities AS marked JOIN project_marks AS m ON m.project = marked.project"
    " WHERE marked.id = {observation}.entity_id), '')"
)
"""The mark a row `{observation}` of `observations` is indexed after: its entity's project's."""


def quoted(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def visible(scope: Scope, column: str) -> str:
    """A condition true for the rows whose `column` (a project) the scope sees; "1" for every project."""
    if scope.every:
        return "1"
    return f"{column} IN ({', '.join(quoted(project) for project in scope.visible)})"


def and_visible(scope: Scope, column: str) -> str:
    """` AND <visible(...)>` as a filter of the rows a lookup found (by name, key or id), or
    nothing for a scope that sees every project.

    The column is written `+column`, which SQLite never answers from an index: given the choice,
    its planner took the project index over the name's, and that index is a scan of every row
    the scope sees (40,000 in the shared space of an older memory: 6 ms a point read, not 0.02).
    A scan that the scope should narrow writes `AND {visible(...)}` itself."""
    return "" if scope.every else f" AND {visible(scope, '+' + column)}"


def project_token(project: str) -> str:
    """The one word that stands for `project` in the word index's `project` column (migration 17).

    Its UTF-8 bytes in hexadecimal, between a prefix and a final digit: one word for the
    tokenizer whatever the key holds (`github.com/acme/api` would be three), and one the
    Porter stemmer leaves whole (no rule cuts a word that ends in a digit).
    """
    return f"gp{project.encode('utf-8', 'surrogatepass').hex()}0"


def within_words(scope: Scope) -> str:
    """What an FTS5 query of the word index adds to keep to the scope's projects: an AND of
    the `project` column, which FTS5 answers by intersecting its lists (a small project of a
    large memory reads what the project holds); nothing for every project."""
    if scope.every:
        return ""
    return f" AND project : ({' OR '.join(chr(34) + project_token(p) + chr(34) for p in scope.visible)})"


def marks_of(conn: sqlite3.Connection, scope: Scope) -> list[str] | None:
    """The trigram-index marks of the projects a scope sees besides the shared space (which
    has none), or None for a scope that sees every project."""
    if scope.every:
        return None
    projects = [project for project in scope.visible if project != SHARED]
    if not projects:
        return []
    rows = conn.execute(
        f"SELECT mark FROM project_marks WHERE project IN ({', '.join(quoted(project) for project in projects)})"
    )
    return [mark for (mark,) in rows]


def within_marks(marks: list[str]) -> str:
    """What a trigram-index query adds to keep to the texts indexed after one of `marks`
    (each one trigram: an AND FTS5 answers by intersecting lists)."""
    return f" AND ({' OR '.join(chr(34) + mark + chr(34) for mark in marks)})"


@dataclass(frozen=True, slots=True)
class WordIndex:
    """A word index a search reads: the memory's, or a project's own (project_words.py), and
    what each of its queries adds to keep to the scope's projects (`within_words`)."""

    table: str = "entity_words"
    within: str = ""

    def query(self, query: str) -> str:
        """`query` kept to the scope."""
        return f"({query}){self.within}"


WORDS = WordIndex()
"""The memory's word index, every project's entities."""
