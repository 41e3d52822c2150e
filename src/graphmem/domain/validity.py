"""Facts that hold for a time (core/validity.py) as the memory shows them.

Two things follow from a fact's valid time:

- **An ended fact is not current.** A fact written with a `validUntil` already past goes
  straight to the entity's history (domain/observations.py). One whose end comes later is
  moved there by `end_lapsed_facts`, which the server runs before a call once the store's
  `next_fact_end` has passed: one write transaction across every project, recorded as a
  change made through `validity`, so the history, `asOf` and undo see it as any other.

      call ─► RecordingStore.may_have_ended(now)? (one row, read at most once a second)
                 └─ yes ─► end_lapsed_facts: each timed entity's ended facts to its history,
                           next_fact_end = the next end still to come ─► the call

- **A read at a date** (`validAt`) shows what held then: `hold_at`, run inside the rolled-back
  transaction of domain/as_of.py, leaves out the current facts that did not hold at that time
  and brings back the past versions that did. A past version counts only when its validity
  ended (it has a `validUntil`: it expired, or a new value of its attribute replaced it); one
  replaced through `supersedes` was a correction, and never held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from graphmem.core.models import Entity
from graphmem.core.projects import EVERY, Scope
from graphmem.core.timestamps import now_iso, touched
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import (
    RECORDS_KEY,
    ObservationRecord,
    history_of,
    is_archived,
    records_of,
    store_entity,
    with_records,
)

__all__ = ["VIA", "as_swept", "end_lapsed_facts", "hold_at"]

VIA = "validity"
"""What the change log says moved ended facts to the history."""


def end_lapsed_facts(graph: KnowledgeGraph) -> int:
    """Move every current fact whose valid time has ended to its entity's history, as one
    change; how many moved. Cheap when none has (a row read at most once a second)."""
    now = now_iso()
    if not graph.facts_may_have_ended(now):
        return 0
    # What the sweep writes is what was stored: it is not looked at for secrets again (under
    # --secrets refuse, one stored secret would stop every call).
    with (
        graph.through(VIA),
        graph.authored_by(None),
        graph.working_in(EVERY),
        graph.texts_checked(),
        graph.store.write(EVERY),
    ):
        return _move_ended(graph, now)


def _move_ended(graph: KnowledgeGraph, now: str) -> int:
    """The sweep's work, inside its transaction; how many facts moved."""
    store = graph.store
    kept = store.next_fact_end()
    if kept is None or kept > now:
        return 0  # another call, or another process, moved them first
    moved = 0
    still_to_come: list[str] = []
    for entity in store.timed_entities():
        current = records_of(entity)
        ended = _ended(current, now)
        still_to_come += [
            end for r in current if r.valid_until is not None and r not in ended and (end := r.validity.end)
        ]
        if ended:
            kept_records = [r for r in current if r not in ended]
            _rewrite(graph, entity, kept_records, history_of(entity) + ended, now)
            moved += len(ended)
    store.set_next_fact_end(min(still_to_come, default=None))
    return moved


def _ended(current: Sequence[ObservationRecord], now: str) -> list[ObservationRecord]:
    return [record for record in current if record.valid_until is not None and record.validity.ended_by(now)]


def as_swept(entity: Entity, now: str) -> Entity:
    """The entity as a sweep at `now` leaves it (its facts whose validity ended moved to its
    history), for a read that does not write: an export shows the memory as a call would."""
    records = (entity.extra or {}).get(RECORDS_KEY)
    if not isinstance(records, list) or not any(isinstance(meta, dict) and "validUntil" in meta for meta in records):
        return entity  # most entities: no fact with an end
    current = records_of(entity)
    ended = _ended(current, now)
    if not ended:
        return entity
    after = with_records(entity, [record for record in current if record not in ended], history_of(entity) + ended)
    return Entity(after.name, after.entity_type, after.observations, after.extra, entity.project)


def hold_at(graph: KnowledgeGraph, moment: str) -> None:
    """Make the memory show what held at `moment` (an instant): call it inside a write
    transaction across every project that is rolled back after the read (domain/as_of.py)."""
    now = now_iso()
    for entity in graph.store.timed_entities():
        current = records_of(entity)
        history = history_of(entity)
        held = [r for r in current if r.validity.holds_at(moment)]
        shown = {r.content for r in held}
        returning: list[ObservationRecord] = []
        for record in reversed(history):  # the newest version of a text, if two held
            if (
                record.valid_until is not None
                and record.content not in shown
                and not is_archived(record.content)
                and record.validity.holds_at(moment)
            ):
                returning.append(record)
                shown.add(record.content)
        if len(held) == len(current) and not returning:
            continue
        left = [r for r in history if all(r is not back for back in returning)]
        back = [replace(record, superseded_by=None) for record in reversed(returning)]
        _rewrite(graph, entity, held + back, left + [r for r in current if r not in held], now)


def _rewrite(
    graph: KnowledgeGraph,
    entity: Entity,
    current: Sequence[ObservationRecord],
    history: Sequence[ObservationRecord],
    now: str,
) -> None:
    """Store `entity` with these current facts and this history, in its own project."""
    after = with_records(entity, current, history)
    after = Entity(after.name, after.entity_type, after.observations, touched(after.extra, now), entity.project)
    scope = Scope(entity.project)
    with graph.store.write(scope), graph.working_in(scope, graph.reach):
        store_entity(graph.store, entity, after)
