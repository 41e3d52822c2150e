"""A transaction's scope (graphmem.core.projects) as PostgreSQL conditions: the rows of the
projects it sees.

The project keys are written into the statement as constants rather than bound as parameters,
as SQLite's backend does (storage/sqlite/scoping.py): the statements they join bind their
parameters by position in some places and by name in others, and the planner sees a constant
as well as a bound value when it weighs the project index against the others (a small
project's rows are few). A scope that sees every project adds nothing, so the statements of
a memory without projects are those of before.
"""

from __future__ import annotations

from graphmem.core.projects import Scope
from graphmem.storage.postgres.text import escape

__all__ = ["and_visible", "literal", "visible"]


def literal(text: str) -> str:
    """`text` (as stored: escaped) as an SQL string constant made of letters, digits and escapes.

    Every other character is spelled as a Unicode escape of an `E''` string, so the constant
    holds no quote to close it, whatever standard_conforming_strings says, and no `%`, which
    psycopg would take for a parameter's mark in a statement that has parameters.
    """
    return "E'" + "".join(map(_spelled, escape(text))) + "'"


def _spelled(char: str) -> str:
    if char.isascii() and char.isalnum():
        return char
    return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"


def visible(scope: Scope, column: str) -> str:
    """A condition true for the rows whose `column` (a project key) the scope sees; `true` for every project."""
    if scope.every:
        return "true"
    return f"{column} IN ({', '.join(literal(project) for project in scope.visible)})"


def and_visible(scope: Scope, column: str) -> str:
    """` AND <visible(...)>`, or nothing for a scope that sees every project."""
    return "" if scope.every else f" AND {visible(scope, column)}"
