"""The official substring match on PostgreSQL, newest first: the entities whose lower-cased
name, type or an observation contains a needle, in the order the SQLite backend walks them.

    per needle, names and types first, then observations (all needles' names before any
    needle's observations), each entity at its newest matching row:

    a word every containing text holds, in few entities ─► only those entities are checked
    else names and types                               ─► LIKE through the pg_trgm index
    else observations, a page wanted                   ─► the newest observations, window by
         window, until the page is full; a rare needle falls back to the pg_trgm index
    else observations, all of them wanted              ─► LIKE through the pg_trgm index

A GIN index cannot give its rows in any order: LIKE through it finds and rechecks every
matching observation, then sorts them, about 100 ms for a word in a third of 40,000
entities, where the newest 16,000 observations hold the 2,001 entities a search needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from graphmem.storage.postgres.ranking import Rows, holding_ids
from graphmem.storage.postgres.text import escape, like_pattern, mid_escape_regex

# The SQLite backend's reasoning about which word a needle's matches must hold (the same
# word index rules, storage/words.py) applies here unchanged.
from graphmem.storage.words import Term, WordSearch, word_inside

__all__ = ["WORD_CANDIDATES", "contains", "walk"]

WORD_CANDIDATES = 200
"""Up to this many entities holding a needle's word, checking each beats any other way."""

_FIRST_WINDOW = 2048
"""Observations read in the first window of a newest-first walk: enough to tell how often the
needle occurs, few enough to cost little (a millisecond or two) when it is rare."""

_WALK_AT_MOST = 32768
"""Observations a newest-first walk reads at most before the pg_trgm index answers for the
rest: about as long as the index takes for a needle in a few thousand observations."""

_MARGIN = 1.25
"""How much more than the estimate a further window reads, so that one more usually suffices."""


def contains(column: str, needle: str, params: dict[str, Any]) -> str:
    """SQL true where `column` (a lower-cased copy) contains `needle` (lower-case, unescaped)."""
    escaped = escape(needle)
    params["pattern"] = like_pattern(escaped)
    condition = f"{column} LIKE %(pattern)s"
    regex = mid_escape_regex(escaped)
    if regex is not None:
        params["regex"] = regex
        condition += f" AND {column} ~ %(regex)s"
    return condition


def walk(
    rows: Rows, search: WordSearch, reach: int | None, selective: Callable[[Term], bool], within: str = ""
) -> list[int]:
    """Ids of the entities containing a needle, newest first; the first `reach` (or all).

    `selective(term)` says whether few enough entities (`WORD_CANDIDATES`) hold the term
    to check each of them. `within` is what keeps to the transaction's projects: a condition
    on the entity `e` (`scoping.and_visible`), inside each query, so that the planner may start
    from a small project's rows.
    """
    found: dict[int, None] = {}
    needles = list(dict.fromkeys(search.needles))
    words: dict[str, Term | None] = {}
    for needle in needles:
        word = word_inside(needle) if needle else None
        words[needle] = word if word is not None and selective(word) else None
    for in_names in (True, False):
        for needle in needles:
            if reach is not None and len(found) >= reach:
                return list(found)
            if in_names:
                _names(rows, search, needle, words[needle], reach, found, within)
            elif words[needle] is None and reach is not None:
                _newest_observations(rows, search, needle, reach, found, within)
            else:
                _observations(rows, search, needle, words[needle], reach, found, within, below=None)
    return list(found)


def _add(found: dict[int, None], ids: list[tuple[Any, ...]], reach: int | None) -> None:
    for entity_id, *_ in ids:
        found[entity_id] = None
        if reach is not None and len(found) >= reach:
            return


def _filters(search: WordSearch, word: Term | None, entity: str, within: str) -> tuple[str, dict[str, Any]]:
    """SQL conditions (each starting with AND) for the projects, the entity type and the needle's word."""
    params: dict[str, Any] = {}
    where = within
    if search.entity_type is not None:
        params["type"] = escape(search.entity_type)
        where += " AND e.entity_type = %(type)s"
    if word is not None:
        ids, values = holding_ids(word)
        params.update(values)
        where += f" AND {entity} IN ({ids})"
    return where, params


def _entity_join(search: WordSearch, within: str) -> str:
    """The join of an observation `o` to its entity `e`, when a filter needs the entity."""
    return "" if search.entity_type is None and not within else " JOIN entities AS e ON e.id = o.entity_id"


def _names(
    rows: Rows,
    search: WordSearch,
    needle: str,
    word: Term | None,
    reach: int | None,
    found: dict[int, None],
    within: str,
) -> None:
    where, params = _filters(search, word, "e.id", within)
    name, kind = contains("e.name_lc", needle, params), contains("e.type_lc", needle, params)
    params["limit"] = reach
    _add(
        found,
        rows(
            f"SELECT e.id FROM entities AS e WHERE (({name}) OR ({kind})){where} ORDER BY e.id DESC LIMIT %(limit)s",
            params,
        ),
        reach,
    )


def _observations(
    rows: Rows,
    search: WordSearch,
    needle: str,
    word: Term | None,
    reach: int | None,
    found: dict[int, None],
    within: str,
    below: int | None,
) -> None:
    """The entities whose observations (those with ids under `below`, if given) contain the
    needle, each at its newest such observation, through an index (the word's, pg_trgm's, or
    a small project's entities and theirs)."""
    where, params = _filters(search, word, "o.entity_id", within)
    join = _entity_join(search, within)
    if below is not None:
        where += " AND o.id < %(below)s"
        params["below"] = below
    condition = contains("o.content_lc", needle, params)
    # An entity met already takes no place further on: the limit counts them too.
    params["limit"] = reach
    _add(
        found,
        rows(
            f"SELECT o.entity_id FROM observations AS o{join} WHERE {condition}{where}"
            " GROUP BY o.entity_id ORDER BY max(o.id) DESC LIMIT %(limit)s",
            params,
        ),
        reach,
    )


def _newest_observations(
    rows: Rows, search: WordSearch, needle: str, reach: int, found: dict[int, None], within: str
) -> None:
    """`_observations` for the first `reach`: reading the newest observations, a window of
    ids at a time, sized from how often the needle occurred in the windows read so far.

    In a small project of a large memory a window holds few of its observations: the rate met
    is low, and the index (with the project's filter) answers for the rest after a window or two."""
    ((low, high),) = rows("SELECT min(id), max(id) FROM observations", ())
    if low is None:
        return
    where, params = _filters(search, None, "o.entity_id", within)
    join = _entity_join(search, within)
    condition = contains("o.content_lc", needle, params)
    below, window, walked, added = int(high) + 1, _FIRST_WINDOW, 0, 0
    while below > low and len(found) < reach:
        if walked + window > _WALK_AT_MOST:
            # Rare here: the index finds the rest at once.
            _observations(rows, search, needle, None, reach, found, within, below=below)
            return
        params["low"], params["below"] = max(low, below - window), below
        # OFFSET 0 keeps the planner from pushing the LIKE into the window and answering it
        # from the pg_trgm index (every match): the window is read from the primary key.
        before = len(found)
        _add(
            found,
            rows(
                "SELECT o.entity_id FROM (SELECT id, entity_id, content_lc FROM observations"
                " WHERE id >= %(low)s AND id < %(below)s OFFSET 0) AS o"
                f"{join} WHERE {condition}{where} ORDER BY o.id DESC",
                params,
            ),
            reach,
        )
        walked += below - params["low"]
        below = params["low"]
        added += len(found) - before
        # The rows still needed at the rate met so far (one past the budget if none was met).
        rate = added / walked
        needed = (reach - len(found)) / rate if rate else _WALK_AT_MOST + 1
        window = max(_FIRST_WINDOW, math.ceil(needed * _MARGIN))
