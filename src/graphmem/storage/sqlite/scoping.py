"""A transaction's scope (graphmem.core.projects) as SQL: the rows of the projects it sees.

The project keys are written into the statement as quoted literals rather than bound as
parameters: the statements they join number their parameters in several ways (`?`, `?1`,
`:name`), and a key is a plain string the quoting makes safe. A scope that sees every
project adds nothing, so the statements of a memory without projects are those of before.
"""

from __future__ import annotations

from graphmem.core.projects import Scope

__all__ = ["PROJECT_TOKEN_SQL", "and_visible", "project_token", "quoted", "visible", "within_words"]

PROJECT_TOKEN_SQL = "'gp' || lower(hex({column})) || '0'"
"""`project_token` in SQL, for the word index's documents (storage/sqlite/pending.py)."""


def quoted(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def visible(scope: Scope, column: str) -> str:
    """A condition true for the rows whose `column` (a project) the scope sees; "1" for every project."""
    if scope.every:
        return "1"
    return f"{column} IN ({', '.join(quoted(project) for project in scope.visible)})"


def and_visible(scope: Scope, column: str) -> str:
    """` AND <visible(...)>`, or nothing for a scope that sees every project."""
    return "" if scope.every else f" AND {visible(scope, column)}"


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
