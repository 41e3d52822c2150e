"""The memory as it stood at a time (`asOf`): every change made since taken back, the read made,
and all of it rolled back. A read at a date of the world (`validAt`, domain/validity.py) is made
the same way, after or without `asOf`.

    as_of(graph, "2026-11-20", read) ─► a write transaction across every project
        ─► each change after that time taken back, newest first (domain/undo.py), which together
           can never conflict: nothing later than them is kept
        ─► read() in the caller's scope, inside the same transaction
        ─► the transaction rolled back: nothing was written, nothing recorded, nothing embedded

So every read answers as of a time with its own code, on every backend. It costs a write
transaction (other writers wait for it) and the changes' operations; it is refused past
`MOST_TAKEN_BACK` changes. What comes back again comes back where undo puts it: an entity
deleted since at the end of the creation order, a fact removed since at the end of its entity's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from graphmem.core.changes import ChangeFilter
from graphmem.core.errors import InvalidInputError
from graphmem.core.projects import EVERY
from graphmem.core.timestamps import now_iso
from graphmem.core.validity import bound
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.undo import changes_since, take_back
from graphmem.domain.validity import hold_at
from graphmem.storage.entity_query import instant

__all__ = ["MOST_TAKEN_BACK", "as_of"]

MOST_TAKEN_BACK = 10_000
"""Changes an `asOf` read takes back at most."""

T = TypeVar("T")


class _Answered(Exception, Generic[T]):
    """Leaves the transaction with the read's answer, which rolls it back."""

    def __init__(self, answer: T) -> None:
        super().__init__("answered")
        self.answer = answer


def as_of(graph: KnowledgeGraph, when: str | None, read: Callable[[], T], *, valid_at: str | None = None) -> T:
    """`read()`'s answer on the memory as it stood at `when` (ISO 8601; None: now), showing the
    facts that held at `valid_at` (a day, month, year or time: domain/validity.py) if given.

    Raises:
        InvalidInputError: `when` is not a time, is in the future, or reaches back past
            `MOST_TAKEN_BACK` changes; `valid_at` is not a date or time.
    """
    moment = None if when is None else instant(when)
    if when is not None and moment is None:
        raise InvalidInputError("asOf", f"is {when!r}, not a time; give an ISO 8601 date or time such as 2026-11-20.")
    if moment is not None and moment > now_iso():
        raise InvalidInputError("asOf", f"is {when!r}, a time still to come; leave asOf out for the memory as it is.")
    held_at = None if valid_at is None else bound(valid_at)
    if valid_at is not None and held_at is None:
        raise InvalidInputError(
            "validAt",
            f"is {valid_at!r}, not a date; give a day (2024-03-01), a month (2024-03), a year or an ISO 8601 time.",
        )
    scope, reach = graph.scope, graph.reach
    store = graph.store
    try:
        # Taking changes back writes what was stored before: no new text to look at for secrets.
        with graph.working_in(EVERY), graph.texts_checked(), store.write(EVERY):
            if moment is not None:
                _take_back_since(graph, moment)
            if held_at is not None:
                hold_at(graph, held_at)
            with graph.working_in(scope, reach):
                answer = read()
            raise _Answered(answer)
    except _Answered as answered:
        return answered.answer  # type: ignore[no-any-return]


def _take_back_since(graph: KnowledgeGraph, moment: str) -> None:
    """Take back every change made after `moment`, inside the caller's transaction."""
    store = graph.store
    kept_since = store.history_since()
    if kept_since is not None and moment < kept_since:
        raise InvalidInputError(
            "asOf", f"is before {kept_since}, where the history this memory keeps starts; ask for a later time."
        )
    # Changes at the moment itself are kept: asOf a change's time shows it made.
    later = changes_since(store, ChangeFilter(since=moment), MOST_TAKEN_BACK + 1)
    if len(later) > MOST_TAKEN_BACK:
        raise InvalidInputError("asOf", f"reaches back past {MOST_TAKEN_BACK:,} changes; ask for a later time.")
    for change in later:
        if change.at == moment:
            continue
        for op in reversed(change.ops):
            take_back(graph, op)
