"""What changed between two times (`diff_memory`, `graphmem diff`): the entities and relations the
changes between them named, as the memory held them at each time (domain/as_of.py), compared.

Only what those changes named is read, twice, so a diff costs what happened between the times,
not the size of the memory. An entity renamed in between shows as one name gone and another come.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphmem.core.changes import ChangeFilter, names_touched
from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.core.timestamps import now_iso
from graphmem.domain.as_of import MOST_TAKEN_BACK, as_of
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.undo import changes_since
from graphmem.storage.entity_query import instant

__all__ = ["DIFF_ITEMS", "EntityDifference", "MemoryDiff", "diff_memory"]

DIFF_ITEMS = 50
"""Items each list of a diff holds at most; the counts say how many there are."""


@dataclass(frozen=True, slots=True)
class EntityDifference:
    """One entity both times held, and what differs."""

    name: str
    type_before: str
    type_after: str
    added: list[str]
    removed: list[str]


@dataclass(frozen=True, slots=True)
class MemoryDiff:
    since: str
    until: str
    changes: int
    added: list[Entity] = field(default_factory=list)
    removed: list[Entity] = field(default_factory=list)
    changed: list[EntityDifference] = field(default_factory=list)
    related: list[Relation] = field(default_factory=list)
    unrelated: list[Relation] = field(default_factory=list)


def _moment(field_name: str, value: str) -> str:
    moment = instant(value)
    if moment is None:
        raise InvalidInputError(
            field_name, f"is {value!r}, not a time; give an ISO 8601 date or time such as 2026-11-20."
        )
    return moment


def diff_memory(graph: KnowledgeGraph, since: str, until: str | None = None) -> MemoryDiff:
    """The difference between the memory as of `since` and as of `until` (now when None).

    Raises:
        InvalidInputError: a time is not one, `until` comes before `since`, or more than
            `MOST_TAKEN_BACK` changes lie between or after them.
    """
    start = _moment("since", since)
    end = now_iso() if until is None else _moment("until", until)
    if end < start:
        raise InvalidInputError("until", f"is {until!r}, before since ({since!r}); give the earlier time as since.")
    store = graph.store
    with store.read(graph.scope):
        between = changes_since(store, ChangeFilter(since=start), MOST_TAKEN_BACK + 1)
    between = [change for change in between if start < change.at <= end]
    if len(between) > MOST_TAKEN_BACK:
        raise InvalidInputError("since", f"more than {MOST_TAKEN_BACK:,} changes lie after it; ask for a later time.")
    names = list(dict.fromkeys(name for change in reversed(between) for _, name in names_touched(change.ops)))

    def read() -> tuple[dict[str, Entity], dict[tuple[str, str, str], Relation]]:
        with store.read(graph.scope):
            entities = {entity.name: entity for entity in store.get_entities(names)}
            relations = {relation.key: relation for relation in store.relations_touching(names)}
        return entities, relations

    before_entities, before_relations = as_of(graph, start, read)
    after_entities, after_relations = read() if until is None else as_of(graph, end, read)
    diff = MemoryDiff(start, end, len(between))
    for name in names:
        old, new = before_entities.get(name), after_entities.get(name)
        if old is None and new is not None:
            diff.added.append(new)
        elif old is not None and new is None:
            diff.removed.append(old)
        elif old is not None and new is not None:
            added = [fact for fact in new.observations if fact not in old.observations]
            removed = [fact for fact in old.observations if fact not in new.observations]
            if added or removed or old.entity_type != new.entity_type:
                diff.changed.append(EntityDifference(name, old.entity_type, new.entity_type, added, removed))
    diff.related.extend(relation for key, relation in after_relations.items() if key not in before_relations)
    diff.unrelated.extend(relation for key, relation in before_relations.items() if key not in after_relations)
    return diff
