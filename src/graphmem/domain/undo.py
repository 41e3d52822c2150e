"""Undo: changes of the log taken back, as one new change (history is never rewritten).

    undo(graph, ask)  ─► the changes asked for (numbers, or every one since a time, maybe only
                         an author's or a tool's), in the caller's scope
                      ─► refused, naming the later change, when one not undone with them
                         touched what they did (the same entity, fact or relation)
                      ─► each change's operations taken back, newest change first, last
                         operation first, in one write transaction made through `undo_changes`

What an operation touches, for that check: an entity as a whole (created, deleted, renamed,
retyped, moved), one of its facts, or a relation (which also leans on its two ends: deleting an
end deletes it). A fact added later to an entity does not stop undoing another fact's addition;
it does stop undoing the entity's creation. An update of an entity's metadata alone (the time
stamps and fact records every write refreshes) touches nothing of its own.

Taken back: a creation by deleting, a deletion by creating again what the log kept whole (at
the end of the creation order, where new entities go), a fact added by removing it (its record
joins the entity's history, as a deleted fact's does), a fact removed by adding it again, a
rename or a new type by the name, type and metadata from before, a move by moving back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphmem.core.changes import Change, ChangeFilter, Op
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import Scope, project_name
from graphmem.core.timestamps import now_iso
from graphmem.domain.change_log import note_undone
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import describe
from graphmem.domain.observations import HISTORY_KEY, RECORDS_KEY, NewObservation, change_observations
from graphmem.storage.base import Store
from graphmem.storage.entity_query import instant

__all__ = ["MOST_UNDONE", "UndoAsk", "UndoOutcome", "changes_since", "take_back", "undo"]

MOST_UNDONE = 1_000
"""Changes one undo takes back at most."""

_LATER_READ = 10_000
"""Later changes read for what depends on those undone; past them, the undo is refused."""

_PAGE = 100

VIA = "undo_changes"


@dataclass(frozen=True, slots=True)
class UndoAsk:
    """Which changes to undo: `changes` by number, or every change `since` a time (the two are
    exclusive), maybe only those of `author` ("" for local ones) or made through `via`."""

    changes: tuple[int, ...] = ()
    since: str | None = None
    author: str | None = None
    via: str | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class UndoOutcome:
    """What an undo took back (or, in a dry run, would): the changes, newest first, and a line for
    each thing taken back."""

    undone: list[Change]
    lines: list[str]
    dry_run: bool


def undo(graph: KnowledgeGraph, ask: UndoAsk) -> UndoOutcome:
    """Take back the changes `ask` names, as one change, or say what that would do (`dry_run`).

    Raises:
        InvalidInputError: nothing or too much is asked, a change is not found in the caller's
            scope, or a later change depends on what would be taken back (named).
    """
    if bool(ask.changes) == (ask.since is not None):
        raise InvalidInputError("changes", "give the numbers of the changes to undo, or `since`: one of the two.")
    if ask.changes and (ask.author is not None or ask.via is not None):
        raise InvalidInputError("author", "author and tool choose among the changes since a time: give `since` too.")
    store = graph.store
    # What an undo writes back was stored before: it is not looked at for secrets again.
    with graph.through(VIA), graph.texts_checked(), store.write(graph.scope):
        chosen = _chosen(store, ask)
        _refuse_unknown(chosen)
        _refuse_outside(graph.scope, chosen)
        _refuse_dependents(store, chosen)
        lines = [f"change {change.seq} ({change.via}): {line}" for change in chosen for line in describe(change)]
        if not ask.dry_run:
            # The new change names what it took back, before what it did.
            note_undone(store, [change.seq for change in chosen])
            for change in chosen:
                for op in reversed(change.ops):
                    take_back(graph, op)
    return UndoOutcome(chosen, lines, ask.dry_run)


def _chosen(store: Store, ask: UndoAsk) -> list[Change]:
    """The changes asked for, newest first."""
    if ask.changes:
        found = []
        for seq in sorted(set(ask.changes), reverse=True):
            page = store.list_changes(ChangeFilter(before=seq + 1), 1)
            if not page.changes or page.changes[0].seq != seq:
                raise InvalidInputError("changes", f"there is no change {seq} here; list_changes shows their numbers.")
            found.append(page.changes[0])
        if len(found) > MOST_UNDONE:
            raise InvalidInputError("changes", f"names {len(found)} changes; undo at most {MOST_UNDONE} at once.")
        return found
    since = instant(ask.since)
    if since is None:
        raise InvalidInputError("since", f"is {ask.since!r}, not a time; give an ISO 8601 date or time.")
    found = list(_pages(store, ChangeFilter(since=since, author=ask.author, via=ask.via), MOST_UNDONE + 1))
    if len(found) > MOST_UNDONE:
        raise InvalidInputError("since", f"finds more than {MOST_UNDONE} changes; undo a shorter stretch at a time.")
    if not found:
        raise InvalidInputError("since", "finds no change to undo (list_changes shows what there is).")
    return found


def changes_since(store: Store, where: ChangeFilter, at_most: int) -> list[Change]:
    """The changes `where` finds, newest first, `at_most` of them."""
    return list(_pages(store, where, at_most))


def _pages(store: Store, where: ChangeFilter, at_most: int) -> Iterator[Change]:
    """The changes `where` finds, newest first, page after page, `at_most` of them."""
    given = 0
    while given < at_most:
        page = store.list_changes(where, min(_PAGE, at_most - given))
        yield from page.changes
        given += len(page.changes)
        if not page.more or not page.changes:
            return
        where = ChangeFilter(where.since, where.until, where.author, where.via, where.names, page.changes[-1].seq)


_KNOWN = frozenset(
    {
        "create_entities",
        "delete_entity",
        "add_facts",
        "remove_facts",
        "update_entity",
        "create_relations",
        "delete_relation",
        "move_entity",
        "move_relation",
        "undo",
        "forget",
    }
)


def _refuse_unknown(chosen: list[Change]) -> None:
    """A change holding an operation this graphmem does not know (a newer one wrote it) is not
    taken back by halves."""
    for change in chosen:
        for op in change.ops:
            if op.get("op") not in _KNOWN:
                raise InvalidInputError(
                    "changes",
                    f"change {change.seq} holds an operation this graphmem cannot take back ({op.get('op')!r}); "
                    "a newer graphmem wrote it: undo it with that one.",
                )


def _refuse_outside(scope: Scope, chosen: list[Change]) -> None:
    """In a project, a change that touched another project is not this one's to undo."""
    if scope.every:
        return
    for change in chosen:
        for project in _projects_of(change):
            if not scope.sees(project):
                raise InvalidInputError(
                    "changes",
                    f"change {change.seq} also changed project {project_name(project)}, which this call does not "
                    'see; undo it across every project ("project": "*").',
                )


def _refuse_dependents(store: Store, chosen: list[Change]) -> None:
    """Refuse, naming it, when a later change not undone with these touched what they did."""
    undone = {change.seq for change in chosen}
    oldest = min(undone)
    touched = [(change, set(_touches(change))) for change in chosen]
    later = _pages(store, ChangeFilter(), _LATER_READ + 1)
    for count, change in enumerate(later):
        if change.seq <= oldest:
            return
        if count == _LATER_READ:
            raise InvalidInputError(
                "changes", f"more than {_LATER_READ:,} changes came after these; undo the later ones first."
            )
        if change.seq in undone:
            continue
        theirs = set(_touches(change))
        for mine, atoms in touched:
            if mine.seq < change.seq and _overlap(atoms, theirs):
                what = ", ".join(describe(change)[:2])
                raise InvalidInputError(
                    "changes",
                    f"change {change.seq} ({change.via}, {change.at}: {what}) came after change {mine.seq} and "
                    f"touched what it did; undo it too (changes [{change.seq}, {mine.seq}]), or leave them both.",
                )


Atom = tuple[str, ...]


def _touches(change: Change) -> Iterator[Atom]:
    """What each operation of a change touched (see the module)."""
    for op in change.ops:
        kind = op["op"]
        if kind == "create_entities":
            for name in op["names"]:
                yield ("entity", op["project"], name)
        elif kind == "delete_entity":
            yield ("entity", op["entity"]["project"], op["entity"]["name"])
        elif kind == "update_entity" and op.get("changed"):
            yield ("entity", op["project"], op["name"])
            yield ("entity", op["project"], op["before"]["name"])
        elif kind in ("add_facts", "remove_facts"):
            for fact in op["facts"]:
                yield ("fact", op["project"], op["name"], fact if kind == "add_facts" else fact[1])
        elif kind in ("create_relations", "delete_relation", "move_relation"):
            for project, key in _relations_of(op):
                yield ("relation", project, *key)
                yield ("end", project, key[0])
                yield ("end", project, key[1])
        elif kind == "move_entity":
            yield ("entity", op["from"], op["name"])
            yield ("entity", op["to"], op["name"])


def _relations_of(op: Op) -> Iterator[tuple[str, tuple[str, str, str]]]:
    kind = op["op"]
    if kind == "create_relations":
        for key in op["keys"]:
            yield op["project"], (key[0], key[1], key[2])
    elif kind == "delete_relation":
        relation = op["relation"]
        yield relation["project"], (relation["from"], relation["to"], relation["relationType"])
    else:
        for project in (op["from"], op["to"]):
            yield project, (op["key"][0], op["key"][1], op["key"][2])


def _overlap(mine: set[Atom], theirs: set[Atom]) -> bool:
    """Whether two changes touched the same thing: the same entity, fact or relation, or an
    entity and one of its facts or relations (two relations that share an end do not clash)."""
    strong = {atom for atom in mine if atom[0] != "end"} & {atom for atom in theirs if atom[0] != "end"}
    if strong:
        return True

    def entities(atoms: set[Atom]) -> set[Atom]:
        return {atom[1:3] for atom in atoms if atom[0] == "entity"}

    def parts(atoms: set[Atom]) -> set[Atom]:
        return {atom[1:3] for atom in atoms if atom[0] in ("fact", "end")}

    return bool(entities(mine) & parts(theirs) or entities(theirs) & parts(mine))


def _projects_of(change: Change) -> Iterator[str]:
    for atom in _touches(change):
        yield atom[1]


def _project_of(op: Op) -> str:
    """The project whose scope takes an operation back."""
    kind = op["op"]
    if kind == "delete_entity":
        return str(op["entity"]["project"])
    if kind == "delete_relation":
        return str(op["relation"]["project"])
    if kind in ("move_entity", "move_relation"):
        return str(op["to"])
    return str(op["project"])


def take_back(graph: KnowledgeGraph, op: Op) -> None:
    """Take back one operation; across every project, in the scope of the project it touched."""
    if op["op"] in ("undo", "forget"):
        return  # a note (what an undo took back, what the retention deleted): nothing to take back
    if graph.scope.every:
        scope = Scope(_project_of(op))
        with graph.store.write(scope), graph.working_in(scope, graph.reach):
            _apply_backward(graph, op)
    else:
        _apply_backward(graph, op)


def _apply_backward(graph: KnowledgeGraph, op: Op) -> None:
    store = graph.store
    kind = op["op"]
    if kind == "create_entities":
        # Relations naming them that were there before them (the official server keeps relations
        # whose ends do not exist) stay: a later one would have stopped the undo.
        before = store.relations_touching(op["names"])
        store.delete_entities(op["names"])
        left = {(relation.key, relation.project) for relation in store.relations_touching(op["names"])}
        gone = [relation for relation in before if (relation.key, relation.project) not in left]
        if gone:
            store.insert_relations(gone)
    elif kind == "delete_entity":
        kept = op["entity"]
        store.insert_entities(
            [Entity(kept["name"], kept["entityType"], tuple(kept["observations"]), kept["extra"], kept["project"])]
        )
    elif kind == "add_facts":
        change_observations(store, op["name"], (), op["facts"], now_iso(), "changes", graph.author)
    elif kind == "remove_facts":
        # [place, text] and, when the fact had them, its attribute and valid time.
        added = []
        for fact in op["facts"]:
            attribute, valid_from, valid_until = [*fact[2:5], None, None, None][:3]
            added.append(NewObservation(fact[1], attribute=attribute, valid_from=valid_from, valid_until=valid_until))
        # Back as they were: a fact a sweep moved is current at the time taken back to.
        change_observations(store, op["name"], added, (), now_iso(), "changes", graph.author, restoring=True)
    elif kind == "update_entity" and op.get("changed"):
        before = op["before"]
        store.update_entity(op["name"], Entity(before["name"], before["entityType"], (), before["extra"]))
    elif kind == "update_entity":
        _restore_history(store, op)
    elif kind == "create_relations":
        store.delete_relations([(key[0], key[1], key[2]) for key in op["keys"]])
    elif kind == "delete_relation":
        kept = op["relation"]
        store.insert_relations(
            [Relation(kept["from"], kept["to"], kept["relationType"], kept["extra"], kept["project"])]
        )
    elif kind == "move_entity":
        store.move_entities([op["name"]], op["to"], op["from"])
    elif kind == "move_relation":
        store.move_relations([(op["key"][0], op["key"][1], op["key"][2])], op["to"], op["from"])


def _restore_history(store: Store, op: Op) -> None:
    """Take back what a metadata-only update did to the entity's records: a fact that went
    straight to the history (archived, or its validity over when written) leaves it, and a
    current fact's end set by a value that begins later (domain/observations.py) is as it was."""
    before_extra = op["before"].get("extra") or {}
    before = before_extra.get(HISTORY_KEY)
    found = store.get_entities([op["name"]])
    if not found:
        return
    entity = found[0]
    extra = dict(entity.extra or {})
    if before is None:
        extra.pop(HISTORY_KEY, None)
    else:
        extra[HISTORY_KEY] = before
    ends_before = {
        meta["id"]: meta.get("validUntil")
        for meta in before_extra.get(RECORDS_KEY) or ()
        if isinstance(meta, dict) and "id" in meta
    }
    records = extra.get(RECORDS_KEY)
    if isinstance(records, list):
        extra[RECORDS_KEY] = [_with_end(meta, ends_before) for meta in records]
    if extra != (entity.extra or {}):
        store.update_entity(entity.name, Entity(entity.name, entity.entity_type, (), extra, entity.project))


def _with_end(meta: Any, ends_before: dict[str, Any]) -> Any:
    """A current fact's record with the end it had before (when it was there before)."""
    if not isinstance(meta, dict) or meta.get("id") not in ends_before:
        return meta
    end = ends_before[meta["id"]]
    if meta.get("validUntil") == end:
        return meta
    kept = {key: value for key, value in meta.items() if key != "validUntil"}
    if end is not None:
        kept["validUntil"] = end
    return kept
