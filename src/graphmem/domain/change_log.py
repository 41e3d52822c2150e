"""The change log's recorder: the store as the domain writes through it.

Every write of the memory, from any front (a tool, the explorer, import, migrate, a move),
is a call of `KnowledgeGraph`, and each of its writes goes through the store it holds. So
`RecordingStore` stands in front of the backend: each write method notes what it does as
operations (graphmem.core.changes), reading inside the same transaction what it is about to
change when taking it back needs that (a deleted entity whole, a fact's place, a type or an
extra before an update); when the outermost write transaction ends, the operations go to
the backend as one change, with who made it and through what, before the transaction commits.

    KnowledgeGraph ─► RecordingStore.write() ─► backend.write()
                         insert/append/update/delete/move: ops += ...; backend.<same>(...)
                      ◄─ end of the block: backend.append_change(NewChange(author, via, ops))
                      ◄─ commit (the change and what it did, or neither)

Reads, searches and everything else pass straight through.

It also takes every secret out of what is written (domain/secret_policy.py), before the
backend or the log sees it, and keeps `Store.next_fact_end` (core/validity.py): each entity written is looked at for
facts that end, and the earliest end goes to the backend in the same transaction; and it says,
from that row read at most once a second, whether a fact may have ended since (`may_have_ended`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from graphmem.core.changes import NewChange, Op, entity_record, relation_record
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import EVERY, SHARED, Scope
from graphmem.core.validity import Validity
from graphmem.domain.observations import RECORDS_KEY, ObservationRecord, records_of
from graphmem.domain.secret_policy import Policy, Redaction, clean_entity, clean_extra, clean_facts, clean_relation
from graphmem.storage.base import Store

_END_SEEN_FOR = 1.0
"""Seconds a read of `next_fact_end` is trusted before it is read again (a write of this
process forgets it at once): a fact ends at most this late in another process's writes."""

__all__ = ["RecordingStore"]


class RecordingStore:
    """A `Store` that records each write transaction that changes the memory as one change.

    Args:
        inner: the backend.
        maker: who and through what the calls made now are made: (author, via).
    """

    def __init__(self, inner: Store, maker: Callable[[], tuple[str | None, str]]) -> None:
        self.inner = inner
        self._maker = maker
        self._local = threading.local()  # each thread's transaction: its operations
        self._end_seen: tuple[float, str | None] | None = None  # (when read, next_fact_end)
        self.secrets: Policy = "redact"
        """What is done with a secret written (domain/secret_policy.py)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def _ops(self) -> list[Op]:
        ops: list[Op] | None = getattr(self._local, "ops", None)
        if ops is None:
            raise RuntimeError("a write of the memory outside write()")
        return ops

    @contextmanager
    def write(self, scope: Scope = EVERY) -> Iterator[None]:
        with self.inner.write(scope):
            if getattr(self._local, "ops", None) is not None:
                # Joins the transaction around it, which records; in the scope it narrows to.
                outer = self._local.scope
                self._local.scope = outer if scope.every else scope
                try:
                    yield
                finally:
                    self._local.scope = outer
                return
            self._local.ops, self._local.scope, self._local.seen = [], scope, {}
            self._local.ends = None
            self._local.redacted = []
            try:
                yield
                self._keep_next_end()
                # Kept for the caller to say what was taken out (a rolled-back write kept nothing).
                self._local.taken = [*(getattr(self._local, "taken", None) or ()), *self._local.redacted]
                if self._local.ops:
                    author, via = self._maker()
                    self.inner.append_change(NewChange(author, via, scope.project, self._local.ops))
            finally:
                self._local.ops = self._local.seen = self._local.ends = self._local.redacted = None

    def take_redactions(self) -> list[Redaction]:
        """The secrets this thread's write transactions took out of what they stored since the
        last call, forgotten as they are returned."""
        taken: list[Redaction] = getattr(self._local, "taken", None) or []
        self._local.taken = []
        return taken

    @property
    def _policy(self) -> Policy:
        """The secrets policy for what this thread writes now: a tool call's arguments were
        cleaned already (server/tool_calls.py), so its writes are not looked at twice."""
        return "allow" if getattr(self._local, "checked", False) else self.secrets

    @contextmanager
    def texts_checked(self) -> Iterator[None]:
        """Write in the block without looking for secrets again: its texts were looked at."""
        before = getattr(self._local, "checked", False)
        self._local.checked = True
        try:
            yield
        finally:
            self._local.checked = before

    def _clean(self, entities: Sequence[Entity]) -> list[Entity]:
        return [clean_entity(entity, self._policy, self._local.redacted) for entity in entities]

    def may_have_ended(self, now: str) -> bool:
        """Whether a current fact may have stopped holding by `now` (and must leave the current
        facts: domain/validity.py)."""
        seen = self._end_seen
        if seen is None or time.monotonic() - seen[0] > _END_SEEN_FOR:
            with self.inner.read():
                seen = (time.monotonic(), self.inner.next_fact_end())
            self._end_seen = seen
        return seen[1] is not None and seen[1] <= now

    def set_next_fact_end(self, when: str | None) -> None:
        self.inner.set_next_fact_end(when)
        self._end_seen = None

    def _note_ends(self, entities: Iterable[Entity]) -> None:
        """Remember the earliest end of the written entities' current facts."""
        # From the records as kept (an update may pass the extra without the facts). A batch's
        # new entities share one extra per shape (domain/writing.py): each is read once.
        extras = {id(entity.extra): entity.extra for entity in entities if entity.extra}
        ends = [
            end
            for extra in extras.values()
            if isinstance(metas := extra.get(RECORDS_KEY), list)
            for meta in metas
            if isinstance(meta, dict)
            and meta.get("validUntil") is not None
            and (end := Validity(None, meta["validUntil"]).end) is not None
        ]
        if ends:
            earliest = min(ends)
            if self._local.ends is None or earliest < self._local.ends:
                self._local.ends = earliest

    def _keep_next_end(self) -> None:
        """The backend's `next_fact_end` no later than the earliest end written now."""
        earliest: str | None = self._local.ends
        if earliest is not None:
            kept = self.inner.next_fact_end()
            if kept is None or earliest < kept:
                self.set_next_fact_end(earliest)

    def get_entities(self, names: Sequence[str]) -> list[Entity]:
        found = self.inner.get_entities(names)
        seen: dict[str, Entity] | None = getattr(self._local, "seen", None)
        if seen is not None:
            # What an update's operation keeps of the entity before it (name, type, extra), read
            # already by the domain: the update need not read it again (_before).
            seen.update((entity.name, entity) for entity in found)
        return found

    # -- the writes -----------------------------------------------------------------------

    def insert_entities(self, entities: Sequence[Entity]) -> None:
        entities = self._clean(entities)
        self.inner.insert_entities(entities)
        self._note_ends(entities)
        # One operation a project, with the names alone: an import of thousands is a list of names.
        by_project: dict[str, list[str]] = {}
        for entity in entities:
            by_project.setdefault(entity.project, []).append(entity.name)
        self._ops.extend({"op": "create_entities", "project": p, "names": names} for p, names in by_project.items())

    def insert_relations(self, relations: Sequence[Relation]) -> None:
        relations = [clean_relation(relation, self._policy, self._local.redacted) for relation in relations]
        self.inner.insert_relations(relations)
        by_project: dict[str, list[list[str]]] = {}
        for relation in relations:
            by_project.setdefault(relation.project, []).append(list(relation.key))
        self._ops.extend({"op": "create_relations", "project": p, "keys": keys} for p, keys in by_project.items())

    def append_observations(self, name: str, contents: Sequence[str]) -> None:
        self.append_observations_batch([(name, contents)])

    def append_observations_batch(self, additions: Sequence[tuple[str, Sequence[str]]]) -> None:
        additions = [
            (name, clean_facts(name, contents, self._policy, self._local.redacted)) for name, contents in additions
        ]
        projects = self._projects_of([name for name, _ in additions])
        self.inner.append_observations_batch(additions)
        self._ops.extend(
            {"op": "add_facts", "project": projects.get(name, SHARED), "name": name, "facts": list(contents)}
            for name, contents in additions
            if contents
        )

    def remove_observations(self, name: str, contents: Sequence[str]) -> int:
        found = self.inner.get_entities([name])
        before = records_of(found[0]) if found else []
        removed = self.inner.remove_observations(name, contents)
        if removed:
            wanted = set(contents)
            # Each with its place, and the attribute it set and when it held (undo puts it back so).
            facts = [
                [place, record.content, *_kept_with(record)]
                for place, record in enumerate(before)
                if record.content in wanted
            ]
            project = self._projects_of([name]).get(name, SHARED)
            self._ops.append({"op": "remove_facts", "project": project, "name": name, "facts": facts})
        return removed

    def update_extras(self, entities: Sequence[Entity]) -> None:
        before = self._before([entity.name for entity in entities])
        entities = [
            replace(entity, extra=clean_extra(entity.name, entity.extra, self._policy, self._local.redacted))
            for entity in entities
        ]
        self.inner.update_extras(entities)
        self._note_ends(entities)
        after = {entity.name: entity for entity in entities}
        self._ops.extend(_updated(entity, after[entity.name]) for entity in before if entity.name in after)
        self._saw(
            Entity(entity.name, entity.entity_type, (), after[entity.name].extra, entity.project)
            for entity in before
            if entity.name in after
        )

    def update_entity(self, name: str, changed: Entity) -> None:
        before = self._before([name])
        changed = clean_entity(changed, self._policy, self._local.redacted)
        self.inner.update_entity(name, changed)
        self._note_ends([changed])
        self._ops.extend(_updated(entity, changed) for entity in before)
        self._forget([name])
        self._saw(Entity(changed.name, changed.entity_type, (), changed.extra, entity.project) for entity in before)

    def note(self, op: Op) -> None:
        """Add an operation that changes nothing but says something of the change (an undo's
        list of the changes it took back)."""
        self._ops.append(op)

    def delete_entities(self, names: Sequence[str]) -> int:
        self._forget(names)
        entities = self.inner.get_entities(names)
        relations = self.inner.relations_touching(names)
        deleted = self.inner.delete_entities(names)
        self._record_gone(relations, self.inner.relations_touching(names))
        self._ops.extend({"op": "delete_entity", "entity": entity_record(entity)} for entity in entities)
        return deleted

    def delete_relations(self, keys: Sequence[tuple[str, str, str]]) -> int:
        wanted = set(keys)
        ends = sorted({name for key in keys for name in key[:2]})
        before = [relation for relation in self.inner.relations_touching(ends) if relation.key in wanted]
        deleted = self.inner.delete_relations(keys)
        if deleted:
            after = [relation for relation in self.inner.relations_touching(ends) if relation.key in wanted]
            self._record_gone(before, after)
        return deleted

    def move_entities(self, names: Sequence[str], source: str, target: str) -> int:
        self._forget(names)
        holding = self.inner.projects_holding(names)
        moved = self.inner.move_entities(names, source, target)
        self._ops.extend(
            {"op": "move_entity", "name": name, "from": source, "to": target}
            for name in dict.fromkeys(names)
            if source in holding.get(name, ())
        )
        return moved

    def move_relations(self, keys: Sequence[tuple[str, str, str]], source: str, target: str) -> int:
        wanted = set(keys)
        ends = sorted({name for key in keys for name in key[:2]})
        present = [r.key for r in self.inner.relations_touching(ends) if r.key in wanted and r.project == source]
        moved = self.inner.move_relations(keys, source, target)
        self._ops.extend({"op": "move_relation", "key": list(key), "from": source, "to": target} for key in present)
        return moved

    def delete_project(self, project: str) -> tuple[int, int]:
        relations = [relation for relation in self.inner.iter_relations() if relation.project == project]
        entities = [entity for entity in self.inner.iter_entities() if entity.project == project]
        deleted = self.inner.delete_project(project)
        self._ops.extend({"op": "delete_relation", "relation": relation_record(r)} for r in relations)
        self._ops.extend({"op": "delete_entity", "entity": entity_record(e)} for e in entities)
        return deleted

    # -- helpers --------------------------------------------------------------------------

    def _before(self, names: Sequence[str]) -> list[Entity]:
        """The named entities as they are, for an update's operation: as this transaction read
        them last, else read now. Only name, type and extra are used."""
        seen: dict[str, Entity] = getattr(self._local, "seen", None) or {}
        if self.inner.holds_projects():
            seen = {}  # a name may be an entity in two projects: read what each is
        missing = [name for name in names if name not in seen]
        read = self.inner.get_entities(missing) if missing else []
        known = {entity.name: entity for entity in read}
        return [seen[name] if name in seen else known[name] for name in names if name in seen or name in known]

    def _saw(self, entities: Iterable[Entity]) -> None:
        seen: dict[str, Entity] | None = getattr(self._local, "seen", None)
        if seen is not None:
            seen.update((entity.name, entity) for entity in entities)

    def _forget(self, names: Sequence[str]) -> None:
        seen: dict[str, Entity] | None = getattr(self._local, "seen", None)
        if seen is not None:
            for name in names:
                seen.pop(name, None)

    def _projects_of(self, names: Sequence[str]) -> dict[str, str]:
        """The project of the entity each name means in the transaction's scope: its project's
        when that holds the name, else the shared space's (a project's scope sees one entity
        of a name at most), else the one project holding it (across every project the domain
        refuses a name two projects hold before it writes)."""
        if not self.inner.holds_projects():
            return {}
        scope: Scope = self._local.scope
        return {
            name: scope.project if scope.project in holders else SHARED if SHARED in holders else holders[0]
            for name, holders in self.inner.projects_holding(names).items()
            if holders
        }

    def _record_gone(self, before: list[Relation], after: list[Relation]) -> None:
        """A `delete_relation` for each relation of `before` that `after` no longer holds."""
        left = {(relation.key, relation.project) for relation in after}
        self._ops.extend(
            {"op": "delete_relation", "relation": relation_record(relation)}
            for relation in before
            if (relation.key, relation.project) not in left
        )


def _kept_with(record: ObservationRecord) -> list[str | None]:
    """What a removed fact's record says beyond its text, as [attribute, validFrom, validUntil],
    without the trailing Nones (a plain fact keeps none)."""
    kept = [record.attribute, record.valid_from, record.valid_until]
    while kept and kept[-1] is None:
        kept.pop()
    return kept


def _updated(before: Entity, after: Entity) -> Op:
    """An `update_entity` operation: the entity now called `after.name`, what it was, and which
    of what a person sees of it changed (none: its metadata alone, the timestamps and fact records
    every write refreshes)."""
    changed = [
        what
        for what, old, new in (
            ("name", before.name, after.name),
            ("entityType", before.entity_type, after.entity_type),
            ("aliases", before.aliases, after.aliases),
        )
        if old != new
    ]
    op: Op = {
        "op": "update_entity",
        "project": before.project,
        "name": after.name,
        "before": {"name": before.name, "entityType": before.entity_type, "extra": before.extra},
    }
    if changed:
        op["changed"] = changed
    return op


def note_forgotten(store: Store, before: str, count: int) -> None:
    """Record, as a change of its own, that the changes made before `before` were deleted (the
    retention, applied by compact)."""
    if isinstance(store, RecordingStore):
        store.note({"op": "forget", "before": before, "changes": count})


def note_undone(store: Store, seqs: list[int]) -> None:
    """Name, in the change being recorded, the changes it takes back (domain/undo.py)."""
    if isinstance(store, RecordingStore):
        store.note({"op": "undo", "changes": seqs})
