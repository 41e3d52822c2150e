"""The change log as people and agents read it: `list_changes` and `graphmem history`.

A change's operations (graphmem.core.changes) are what undo reads; what a reader wants is a
line for each ("added 2 facts to Ada"), at most `DESCRIBED_OPS` of them a change, so that a
page of an import's thousands of creations stays a page.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.core.changes import Change, ChangeFilter, ChangePage, Op
from graphmem.core.errors import InvalidInputError
from graphmem.core.projects import project_name
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage.base import Store
from graphmem.storage.entity_query import instant

__all__ = ["DEFAULT_CHANGES", "DESCRIBED_OPS", "MOST_CHANGES", "ChangeQuery", "describe", "list_changes"]

DEFAULT_CHANGES = 20
"""Changes a page holds when the caller does not say."""

MOST_CHANGES = 100
"""Changes a page holds at most."""

DESCRIBED_OPS = 10
"""Operations described a change; past them, how many more there are."""


@dataclass(frozen=True, slots=True)
class ChangeQuery:
    """A request for a page of the change log, as a caller gives it (checked by `list_changes`)."""

    since: str | None = None
    until: str | None = None
    author: str | None = None
    via: str | None = None
    entity: str | None = None
    before: int | None = None
    limit: int = DEFAULT_CHANGES


def _instant(field: str, value: str | None) -> str | None:
    if value is None:
        return None
    found = instant(value)
    if found is None:
        raise InvalidInputError(
            field,
            f"is {value!r}, not a time; give an ISO 8601 date or time such as 2026-11-28 or 2026-11-28T14:30:00Z.",
        )
    return found


def list_changes(graph: KnowledgeGraph, query: ChangeQuery) -> ChangePage:
    """The page of changes `query` asks for, newest first, in the caller's scope: in a project,
    the changes that named its entities or the shared space's."""
    if not 1 <= query.limit <= MOST_CHANGES:
        raise InvalidInputError("limit", f"is {query.limit}; give 1 to {MOST_CHANGES}.")
    if query.before is not None and query.before < 1:
        raise InvalidInputError("before", f"is {query.before}; give the number of a change (1 or more).")
    since, until = _instant("since", query.since), _instant("until", query.until)
    store = graph.store
    with store.read(graph.scope):
        names = () if query.entity is None else _names_over_time(store, query.entity)
        where = ChangeFilter(since, until, query.author, query.via, names, query.before)
        return store.list_changes(where, query.limit)


RENAMES_FOLLOWED = 20
"""Earlier names an entity's changes are looked for under, at most."""

_PAGE = 100


def _names_over_time(store: Store, name: str) -> tuple[tuple[str, int, int | None], ...]:
    """The names an entity has had, back through its renames, each with the changes it had it in
    (`ChangeFilter.names`): from the change after another entity of that name last went (was
    deleted or renamed away), to the change that renamed this one away (None: it has it still).
    So a new entity that takes a deleted or renamed one's name has its own timeline."""
    names: list[tuple[str, int, int | None]] = []
    seen = {name}
    waiting: list[tuple[str, int | None]] = [(name, None)]
    while waiting and len(names) <= RENAMES_FOLLOWED:
        current, upto = waiting.pop()
        after = 0
        before = None if upto is None else upto + 1
        while not after:
            page = store.list_changes(ChangeFilter(names=((current, 0, upto),), before=before), _PAGE)
            for change in page.changes:
                for op in change.ops:
                    renamed_into = op["op"] == "update_entity" and op["name"] == current
                    if renamed_into and op["before"]["name"] not in seen:
                        seen.add(op["before"]["name"])
                        waiting.append((op["before"]["name"], change.seq))
                    if change.seq != upto and _gone(op, current):
                        after = change.seq
                if after:
                    break
            if not page.more:
                break
            before = page.changes[-1].seq
        names.append((current, after, upto))
    return tuple(names)


def _gone(op: Op, name: str) -> bool:
    """Whether `op` took the entity called `name` away: deleted it, or renamed it to another name."""
    if op["op"] == "delete_entity":
        return bool(op["entity"]["name"] == name)
    return bool(op["op"] == "update_entity" and op["before"]["name"] == name and op["name"] != name)


def describe(change: Change) -> list[str]:
    """A line for each of the change's first `DESCRIBED_OPS` operations, and one saying how many
    more there are."""
    # An update of an entity's metadata alone (its timestamps, its facts' records) goes with the
    # operation that made it, which says more: "added 2 facts to Ada", not also "updated Ada".
    named = {(op["project"], op["name"]) for op in change.ops if op["op"] in ("add_facts", "remove_facts")}
    named |= {(op["project"], name) for op in change.ops if op["op"] == "create_entities" for name in op["names"]}
    ops = [op for op in change.ops if not _metadata_only(op) or (op["project"], op["name"]) not in named]
    lines = [_described(op) for op in ops[:DESCRIBED_OPS]]
    if len(ops) > DESCRIBED_OPS:
        left = len(ops) - DESCRIBED_OPS
        lines.append(f"and {left} more operation{'s' if left != 1 else ''}")
    return lines


LISTED = 5
"""Names a line lists; past them, how many more."""


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown if len(names) <= LISTED else f"{shown} and {len(names) - LISTED} more"


def _metadata_only(op: Op) -> bool:
    return bool(op["op"] == "update_entity" and not op.get("changed"))


def _facts(count: int) -> str:
    return f"{count} fact{'s' if count != 1 else ''}"


def _described(op: Op) -> str:
    kind = op["op"]
    if kind == "create_entities":
        return f"created {_listed(op['names'])}"
    if kind == "delete_entity":
        entity = op["entity"]
        return f"deleted {entity['name']} (with {_facts(len(entity['observations']))})"
    if kind == "add_facts":
        return f"added {_facts(len(op['facts']))} to {op['name']}"
    if kind == "remove_facts":
        return f"removed {_facts(len(op['facts']))} from {op['name']}"
    if kind == "update_entity":
        before = op["before"]
        if before["name"] != op["name"]:
            return f"renamed {before['name']} to {op['name']}"
        changed = op.get("changed")
        return f"changed the {' and '.join(changed)} of {op['name']}" if changed else f"updated {op['name']}"
    if kind == "create_relations":
        return f"related {_listed([f'{source} -{kind}-> {target}' for source, target, kind in op['keys']])}"
    if kind == "delete_relation":
        relation = op["relation"]
        return f"removed the relation {relation['from']} -{relation['relationType']}-> {relation['to']}"
    if kind == "move_entity":
        return f"moved {op['name']} from {project_name(op['from'])} to {project_name(op['to'])}"
    if kind == "move_relation":
        source, target, relation_type = op["key"]
        return f"moved the relation {source} -{relation_type}-> {target} to {project_name(op['to'])}"
    if kind == "forget":
        return f"forgot {op['changes']} change{'s' if op['changes'] != 1 else ''} made before {op['before']}"
    if kind == "undo":
        undone = op["changes"]
        return f"undid change{'s' if len(undone) != 1 else ''} {_listed([str(seq) for seq in undone])}"
    return str(kind)
