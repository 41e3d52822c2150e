"""Observations as records (spec 003) with versions (spec 001): ids, metadata, history.

The official tools see an entity's observations as plain strings, and files must stay
loadable by the official server, so the strings stay where they are: the entity's
current facts, in order. Their metadata rides in the entity's extra keys:

- `observationMeta`: one object per current observation, in the same order (`id`,
  `createdAt`, `version`, and `threadId`, `confidence`, `importance`, `supersedes`,
  `author` (the name of the team member's token that added it) when known);
- `observationHistory`: whole records (with `content`) of the facts no longer current:
  those a newer observation superseded, archived ones (`[S:Archived]`), which are kept but
  never shown by the read tools, and those whose valid time ended (`validUntil`,
  core/validity.py).

An entity written before records existed has no metadata: its observations get the ids
`obs_1`, `obs_2`, ... in order, the same ids every time, until a write stores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphmem.core.contradictions import Clash, contradiction
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity
from graphmem.core.timestamps import touched
from graphmem.core.validity import Validity, instant_of
from graphmem.domain.observation_text import ARCHIVED, parse_observation
from graphmem.storage.base import Store

__all__ = [
    "HISTORY_KEY",
    "RECORDS_KEY",
    "NewObservation",
    "ObservationRecord",
    "PlannedChange",
    "change_observations",
    "history_of",
    "is_archived",
    "new_records",
    "plan_observations",
    "records_of",
    "store_entity",
    "stored_difference",
    "with_records",
    "without_archived",
]

_META = "observationMeta"
RECORDS_KEY = _META
_HISTORY = "observationHistory"
HISTORY_KEY = _HISTORY
"""The extra key that holds an entity's past versions."""


@dataclass(frozen=True, slots=True)
class ObservationRecord:
    """One observation with its metadata.

    Attributes:
        superseded_by: the id of the observation that replaced this one, if any.
        author: the name of the token whose call added it; None when unknown (stdio, one token).
    """

    id: str
    content: str
    created_at: str | None = None
    version: int = 1
    thread_id: str | None = None
    confidence: float | None = None
    importance: float | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    author: str | None = None
    attribute: str | None = None
    """What the fact sets (`employer`): an entity holds one current fact of an attribute."""
    valid_from: str | None = None
    valid_until: str | None = None
    """When the fact holds in the world, as kept (core/validity.py); None: open."""

    @property
    def current(self) -> bool:
        return self.superseded_by is None and not is_archived(self.content)

    @property
    def validity(self) -> Validity:
        """When the fact holds: its `validFrom`, else the time of its `[2024-03-01]` prefix."""
        start = self.valid_from
        if start is None:
            stamp = parse_observation(self.content).timestamp
            start = None if stamp is None else instant_of(stamp)
        return Validity(start, self.valid_until)

    @property
    def timed(self) -> bool:
        """Whether the fact may hold for a time only (a bound, or a prefix that may give one)."""
        return self.valid_from is not None or self.valid_until is not None or self.content.lstrip()[:1] == "["

    def to_wire(self) -> dict[str, Any]:
        """The record as the richer tools show it, with the status and time its prefixes give."""
        parsed = parse_observation(self.content)
        wire: dict[str, Any] = {"id": self.id, "content": self.content, "version": self.version}
        optional = {
            "createdAt": self.created_at,
            "threadId": self.thread_id,
            "confidence": self.confidence,
            "importance": self.importance,
            "supersedes": self.supersedes,
            "supersededBy": self.superseded_by,
            "author": self.author,
            "attribute": self.attribute,
            "validFrom": self.valid_from,
            "validUntil": self.valid_until,
            "status": parsed.status.capitalize() if parsed.status else None,
            "timestamp": parsed.timestamp.isoformat().replace("+00:00", "Z") if parsed.timestamp else None,
        }
        wire.update({key: value for key, value in optional.items() if value is not None})
        return wire

    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"id": self.id, "version": self.version}
        for key, value in (
            ("createdAt", self.created_at),
            ("threadId", self.thread_id),
            ("confidence", self.confidence),
            ("importance", self.importance),
            ("supersedes", self.supersedes),
            ("supersededBy", self.superseded_by),
            ("author", self.author),
            ("attribute", self.attribute),
            ("validFrom", self.valid_from),
            ("validUntil", self.valid_until),
        ):
            if value is not None:
                meta[key] = value
        return meta


def is_archived(content: str) -> bool:
    return parse_observation(content).status == ARCHIVED


def _not_current(record: ObservationRecord, now: str) -> bool:
    """Archived, or its valid time over by `now`: kept in the history, never shown as current."""
    return is_archived(record.content) or (record.valid_until is not None and record.validity.ended_by(now))


def _record(content: str, meta: Any, fallback_id: str) -> ObservationRecord:
    if not isinstance(meta, dict):
        return ObservationRecord(fallback_id, content)

    def text(key: str) -> str | None:
        value = meta.get(key)
        return value if isinstance(value, str) else None

    def number(key: str) -> float | None:
        value = meta.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    version = meta.get("version")
    return ObservationRecord(
        text("id") or fallback_id,
        content,
        text("createdAt"),
        version if isinstance(version, int) and not isinstance(version, bool) else 1,
        text("threadId"),
        number("confidence"),
        number("importance"),
        text("supersedes"),
        text("supersededBy"),
        text("author"),
        text("attribute"),
        text("validFrom"),
        text("validUntil"),
    )


def records_of(entity: Entity) -> list[ObservationRecord]:
    """The records of the entity's current observations, in order."""
    extra = entity.extra or {}
    metas = extra.get(_META)
    # Observations appended without records (a bulk import) follow the recorded ones:
    # their ids continue after the highest id the entity has used.
    metas = metas if isinstance(metas, list) and len(metas) <= len(entity.observations) else []
    records = [
        _record(content, meta, f"obs_{index + 1}")
        for index, (content, meta) in enumerate(zip(entity.observations, metas, strict=False))
    ]
    used = [*records, *history_of(entity)]
    for content in entity.observations[len(records) :]:
        record = ObservationRecord(next_id(used) if metas else f"obs_{len(records) + 1}", content)
        records.append(record)
        used.append(record)
    return records


def history_of(entity: Entity) -> list[ObservationRecord]:
    """The records of the entity's observations that are no longer current, oldest first."""
    history = (entity.extra or {}).get(_HISTORY)
    if not isinstance(history, list):
        return []
    return [
        _record(item["content"], item, f"obs_h{index + 1}")
        for index, item in enumerate(history)
        if isinstance(item, dict) and isinstance(item.get("content"), str)
    ]


def next_id(records: Sequence[ObservationRecord]) -> str:
    """An id no record of the entity has: one past the highest `obs_N`."""
    highest = 0
    for record in records:
        number = record.id.removeprefix("obs_")
        if number.isdigit():
            highest = max(highest, int(number))
    return f"obs_{highest + 1}"


def with_records(entity: Entity, current: Sequence[ObservationRecord], history: Sequence[ObservationRecord]) -> Entity:
    """The entity holding exactly these current observations and this history."""
    extra = dict(entity.extra or {})
    if current:
        extra[_META] = [record._meta() for record in current]
    else:
        extra.pop(_META, None)
    if history:
        extra[_HISTORY] = [{**record._meta(), "content": record.content} for record in history]
    else:
        extra.pop(_HISTORY, None)
    return Entity(entity.name, entity.entity_type, tuple(record.content for record in current), extra, entity.project)


def superseded(record: ObservationRecord, by: str) -> ObservationRecord:
    return replace(record, superseded_by=by)


@dataclass(frozen=True, slots=True)
class NewObservation:
    """An observation to add, with what spec 001 says about it.

    Attributes:
        supersedes: the id of a current observation this one corrects; that one moves to
            the history, and this one's version is one more.
    """

    content: str
    supersedes: str | None = None
    thread_id: str | None = None
    confidence: float | None = None
    importance: float | None = None
    attribute: str | None = None
    """What the fact sets: the entity's current fact of the same attribute, if any, is superseded."""
    valid_from: str | None = None
    valid_until: str | None = None
    """When the fact holds in the world (core/validity.py, kept form); one that has ended by
    the time it is written goes straight to the history."""


def new_records(
    observations: Sequence[NewObservation], now: str, author: str | None = None
) -> tuple[list[ObservationRecord], list[ObservationRecord]]:
    """The current records and the history of a new entity's observations (archived ones go
    to history), added at `now` by `author`."""
    current: list[ObservationRecord] = []
    history: list[ObservationRecord] = []
    for index, item in enumerate(observations):
        record = ObservationRecord(
            f"obs_{index + 1}",
            item.content,
            now,
            1,
            item.thread_id,
            item.confidence,
            item.importance,
            author=author,
            attribute=item.attribute,
            valid_from=item.valid_from,
            valid_until=item.valid_until,
        )
        (history if _not_current(record, now) else current).append(record)
    return current, history


@dataclass(frozen=True, slots=True)
class ObservationChange:
    """What `change_observations` did: the contents added (archived ones included) and removed."""

    added: tuple[str, ...]
    removed: int
    clashes: tuple[Clash, ...] = ()
    """Current facts the added ones may contradict (core/contradictions.py): named, never changed."""


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """An entity as a change of its observations leaves it, before anything is written.

    Attributes:
        entity: the entity afterwards (current facts in order, records and history in extra),
            or None when the change changes nothing.
    """

    entity: Entity | None
    added: tuple[str, ...]
    removed: int
    clashes: tuple[Clash, ...] = ()


def plan_observations(
    entity: Entity,
    add: Sequence[NewObservation],
    remove: Sequence[str],
    now: str,
    field: str,
    author: str | None = None,
    restoring: bool = False,
) -> PlannedChange:
    """What adding and removing observations at `now` by `author` does to `entity`, keeping
    records, history and versions. `restoring`: the facts come back as they were (an undo),
    current even when their validity has ended since (the next sweep moves them again).

    A content the entity has already is not added twice; a removed content is dropped
    (not kept in history); a superseded one moves to the history.

    Raises:
        InvalidInputError: `supersedes` names no current observation of the entity.
    """
    name = entity.name
    current = records_of(entity)
    history = history_of(entity)
    removing = set(remove)
    kept = [record for record in current if record.content not in removing and not is_archived(record.content)]
    # An archived fact still among the current ones (a file written elsewhere) moves to the history.
    history += [record for record in current if record.content not in removing and is_archived(record.content)]
    removed = sum(record.content in removing for record in current)
    have = {record.content for record in kept}
    fresh: list[ObservationRecord] = []
    added: list[str] = []
    for item in add:
        if item.content in have:
            if item.supersedes is not None:
                # A fact already written, now said to replace another: the other becomes its past version.
                _mark_replacing(kept, history, item.content, item.supersedes, field, name)
            continue
        record = ObservationRecord(
            next_id([*current, *history, *fresh]),
            item.content,
            now,
            1,
            item.thread_id,
            item.confidence,
            item.importance,
            author=author,
            attribute=item.attribute,
            valid_from=item.valid_from,
            valid_until=item.valid_until,
        )
        replaced_value = False
        if item.supersedes is None and item.attribute is not None:
            record, item, replaced_value = _place_value(record, item, kept, now)
        if item.supersedes is not None:
            old = next((r for r in kept if r.id == item.supersedes), None)
            if old is None:
                raise InvalidInputError(
                    field,
                    f"supersedes {item.supersedes!r}, which is not a current observation of {name!r}; "
                    "get_entity shows the current observations with their ids.",
                )
            kept.remove(old)
            if replaced_value and (old.validity.end is None or old.validity.end > now):
                # The old value held until the new one began (now, unless the new one says):
                # a read at an earlier time (validAt) sees it. A correction through
                # `supersedes` says the old fact never held.
                if record.validity.start is None:
                    record = replace(record, valid_from=now)
                old = replace(old, valid_until=record.validity.start)
            history.append(superseded(old, record.id))
            # A new version of an attribute's value is a value of that attribute too.
            attribute = record.attribute if record.attribute is not None else old.attribute
            record = replace(record, supersedes=old.id, version=old.version + 1, attribute=attribute)
        fresh.append(record)
        have.add(item.content)
        added.append(item.content)
        ended = _not_current(record, now) if not restoring else is_archived(record.content)
        (history if ended else kept).append(record)
    staying = {record.id for record in kept}
    left = [record for record in current if record.id not in staying and record.attribute is not None]
    if left:
        _chain_again(kept, left, now)
    if not added and len(kept) == len(current):
        return PlannedChange(None, (), 0)
    changed = with_records(entity, kept, history)
    return PlannedChange(
        Entity(name, entity.entity_type, changed.observations, touched(changed.extra, now, by=author), entity.project),
        tuple(added),
        removed,
        _clashes(fresh, [record for record in kept if record not in fresh]),
    )


def _place_value(
    record: ObservationRecord, item: NewObservation, kept: list[ObservationRecord], now: str
) -> tuple[ObservationRecord, NewObservation, bool]:
    """Give a new value of an attribute its place among the current ones: one value holds at
    a time, each until the next begins.

    A value for now replaces the one holding now (which becomes its past version: the item
    `supersedes` it, and True says so). A value that begins later leaves the one before it
    current, ending where it begins (the sweep moves it then); one that begins when another
    waiting value does replaces that one (a plan changed). Either holds until a value already
    waiting to begin after it. A value whose validity is over (a past home, written for the
    record) replaces nothing.
    """
    values = [other for other in kept if other.attribute == item.attribute]
    if not values or record.validity.ended_by(now):
        return record, item, False
    begins = record.validity.start
    replacing = False
    if begins is not None and begins > now:
        same_start = next((other for other in values if other.validity.start == begins), None)
        if same_start is not None:
            item, replacing = replace(item, supersedes=same_start.id), True
        else:
            earlier = [other for other in values if (other.validity.start or "") < begins]
            before = max(earlier, key=lambda other: other.validity.start or "", default=None)
            if before is not None and (before.validity.end is None or before.validity.end > begins):
                kept[kept.index(before)] = replace(before, valid_until=begins)
    else:
        holding = next((other for other in values if other.validity.holds_at(now)), None)
        if holding is not None:
            item, replacing = replace(item, supersedes=holding.id), True
    starts = [other.validity.start for other in values]
    waiting = min((start for start in starts if start is not None and start > (begins or now)), default=None)
    if waiting is not None and (record.validity.end is None or record.validity.end > waiting):
        record = replace(record, valid_until=waiting)
    return record, item, replacing


def _chain_again(kept: list[ObservationRecord], gone: Sequence[ObservationRecord], now: str) -> None:
    """When a value that was waiting to begin leaves (deleted, or replaced), the value that was
    to end where it began holds on: until the next value waiting after it, else with no end."""
    for left in gone:
        start = left.validity.start
        if left.attribute is None or start is None or start <= now:
            continue
        for index, other in enumerate(kept):
            if other.attribute != left.attribute or other.validity.end != start:
                continue
            after = [
                value.validity.start
                for value in kept
                if value.attribute == left.attribute
                and value.validity.start is not None
                and value.validity.start > (other.validity.start or now)
            ]
            kept[index] = replace(other, valid_until=min(after, default=None))


_CLASHES_A_FACT = 3
"""Current facts a new one is said to contradict at most (the likeliest: the first found)."""


def _clashes(fresh: Sequence[ObservationRecord], standing: Sequence[ObservationRecord]) -> tuple[Clash, ...]:
    """The current facts each new fact may contradict. A fact that holds for another time than
    the new one (their valid times do not meet) contradicts nothing."""
    found: list[Clash] = []
    for new in fresh:
        if not new.current:
            continue
        count = 0
        for old in standing:
            if count == _CLASHES_A_FACT or not _times_meet(new, old):
                continue
            why = contradiction(new.content, old.content)
            if why is not None:
                found.append(Clash(new.content, old.id, old.content, why.rule, why.about))
                count += 1
    return tuple(found)


def _times_meet(one: ObservationRecord, other: ObservationRecord) -> bool:
    if one.valid_from is None and one.valid_until is None and other.valid_from is None and other.valid_until is None:
        return True
    a, b = one.validity, other.validity
    return (a.end is None or b.start is None or b.start < a.end) and (
        b.end is None or a.start is None or a.start < b.end
    )


def _mark_replacing(
    kept: list[ObservationRecord], history: list[ObservationRecord], content: str, replaced: str, field: str, name: str
) -> None:
    """Make the current fact `content` the new version of the current fact `replaced` (an id)."""
    newer = next(record for record in kept if record.content == content)
    old = next((record for record in kept if record.id == replaced and record is not newer), None)
    if old is None:
        raise InvalidInputError(
            field,
            f"supersedes {replaced!r}, which is not another current observation of {name!r}; "
            "get_entity shows the current observations with their ids.",
        )
    kept.remove(old)
    history.append(superseded(old, newer.id))
    kept[kept.index(newer)] = replace(newer, supersedes=old.id, version=max(newer.version, old.version + 1))


def stored_difference(before: Entity, after: Entity) -> tuple[list[str], list[str]]:
    """The observation rows to delete and to append (in order) to turn `before` into `after`.

    A planned change keeps the surviving observations in their order and appends new ones,
    so the rows follow the records: a record of `before` missing from `after` is deleted,
    a record new in `after` is appended.
    """
    old = records_of(before)
    new = records_of(after)
    old_ids = {record.id for record in old}
    new_ids = {record.id for record in new}
    gone = [record.content for record in old if record.id not in new_ids]
    appended = [record.content for record in new if record.id not in old_ids]
    return gone, appended


def change_observations(
    store: Store,
    name: str,
    add: Sequence[NewObservation],
    remove: Sequence[str],
    now: str,
    field: str,
    author: str | None = None,
    restoring: bool = False,
) -> ObservationChange:
    """Add and remove observations of entity `name` (see `plan_observations`) and store the result.

    Call it inside a write transaction.

    Raises:
        InvalidInputError: `supersedes` names no current observation of the entity.
    """
    entity = store.get_entities([name])[0]
    plan = plan_observations(entity, add, remove, now, field, author, restoring)
    if plan.entity is None:
        return ObservationChange((), 0)
    store_entity(store, entity, plan.entity)
    return ObservationChange(plan.added, plan.removed, plan.clashes)


def store_entity(store: Store, before: Entity, after: Entity) -> None:
    """Store `after` in place of `before`, one entity as `store` sees it: the observation rows
    that changed (`stored_difference`), then its name, type and metadata. Call it inside a
    write transaction."""
    gone, appended = stored_difference(before, after)
    if gone:
        store.remove_observations(before.name, gone)
    if appended:
        store.append_observations(before.name, appended)
    store.update_entity(before.name, after)


def without_archived(entity: Entity) -> Entity:
    """The entity with any `[S:Archived]` observation moved from its current facts to its history."""
    if not any(is_archived(content) for content in entity.observations):
        return entity
    current = records_of(entity)
    history = history_of(entity) + [record for record in current if not record.current]
    return with_records(entity, [record for record in current if record.current], history)
