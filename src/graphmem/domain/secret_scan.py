"""Secrets a memory already holds (written before graphmem checked, or with `--secrets allow`):
found by entity and fact, and taken out (`graphmem scan-secrets`, `--fix`).

    scan_secrets ─► every entity of every project: name, type, facts, aliases, past versions;
                    every relation: its ends and type; every change of the log
    fix_secrets  ─► one write across every project, recorded through `scan-secrets`:
                      a fact holding a secret ─► a new version with the marker in its place
                        (the old version is not kept: its text held the secret)
                      past versions, aliases, a type ─► their text redacted in place
                      a name ─► the entity renamed, its relations following
                      a relation's type or ends ─► the relation replaced by its redacted one
                 ─► the change log's operations and names, rewritten with the markers
                 ─► the store compacted (SQLite: the file rewritten without its free pages and
                    the write-ahead log emptied; PostgreSQL: VACUUM FULL of the tables)

Vectors go with their texts: a removed fact's vector is deleted with its row, and a renamed
entity's is made again from the new name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from graphmem.core.changes import Change, ChangeFilter
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import EVERY, Scope
from graphmem.core.secrets import redact
from graphmem.core.timestamps import now_iso, touched
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import (
    ObservationRecord,
    history_of,
    next_id,
    records_of,
    store_entity,
    with_records,
)
from graphmem.domain.secret_policy import (
    Redaction,
    clean_arguments,
    clean_entity,
    clean_relation,
    holds_secret,
    numbered,
)

__all__ = ["VIA", "SecretScan", "fix_secrets", "scan_secrets"]

VIA = "scan-secrets"
"""What the change log says a fix was made through."""

_PAGE = 500


@dataclass(frozen=True, slots=True)
class Holder:
    """An entity or relation that holds secrets: what it is (`entity 'deploy bot'`, with its
    project when it has one), and each secret's place and kind."""

    what: str
    found: tuple[Redaction, ...]


@dataclass(slots=True)
class SecretScan:
    """What a scan found (or a fix took out)."""

    holders: list[Holder] = field(default_factory=list)
    changes: int = 0
    """Changes of the log whose operations or names hold a secret."""

    @property
    def secrets(self) -> int:
        return sum(len(holder.found) for holder in self.holders)


def _where(entity: Entity) -> str:
    project = f" (project {entity.project})" if entity.project else ""
    return f"entity {redact(entity.name)[0][:60]!r}{project}"


def _entity_secrets(entity: Entity) -> list[Redaction]:
    found: list[Redaction] = []
    clean_entity(entity, "redact", found)
    # The places in `found` start with the entity's name; the holder says it once.
    prefix = f"entity {redact(entity.name)[0][:60]!r}."
    return [replace(item, where=item.where.removeprefix(prefix)) for item in found]


def _relation_secrets(relation: Relation) -> list[Redaction]:
    found: list[Redaction] = []
    clean_relation(relation, "redact", found)
    return [replace(item, where=item.where.rsplit(".", 1)[-1]) for item in found]


def _relation_where(relation: Relation) -> str:
    project = f" (project {relation.project})" if relation.project else ""
    from_, to, relation_type = (redact(text)[0][:40] for text in (relation.from_, relation.to, relation.relation_type))
    return f"relation {from_!r} -{relation_type}-> {to!r}{project}"


def _redacted(value: Any) -> Any:
    """A JSON value with every text in it redacted (the same value when none holds a secret)."""
    return clean_arguments(value, "redact")[0]


def _changes(graph: KnowledgeGraph) -> Iterator[Change]:
    """Every change of the log, newest first, a page at a time."""
    before = None
    while True:
        with graph.working_in(EVERY), graph.store.read():
            page = graph.store.list_changes(ChangeFilter(before=before), _PAGE)
        yield from page.changes
        if not page.more or not page.changes:
            return
        before = page.changes[-1].seq


def scan_secrets(graph: KnowledgeGraph) -> SecretScan:
    """Every secret the memory holds, by entity and relation, and the changes of its log that hold one."""
    scan = SecretScan()
    with graph.working_in(EVERY), graph.store.read():
        for entity in graph.store.iter_entities():
            found = _entity_secrets(entity)
            if found:
                scan.holders.append(Holder(_where(entity), tuple(found)))
        for relation in graph.store.iter_relations():
            found = _relation_secrets(relation)
            if found:
                scan.holders.append(Holder(_relation_where(relation), tuple(found)))
    scan.changes = sum(holds_secret(change.ops) for change in _changes(graph))
    return scan


def fix_secrets(graph: KnowledgeGraph) -> SecretScan:
    """Take every secret out of the memory and its history (see the module's notes); what was taken out."""
    scan = SecretScan()
    store = graph.store
    now = now_iso()
    with graph.through(VIA), graph.authored_by(None), graph.working_in(EVERY), store.write(EVERY):
        # Named before anything changes: a renamed entity's relations are replaced with it. Two
        # names that differ only by their secrets would become one: the later gets a number.
        entities: list[tuple[Entity, list[Redaction]]] = []
        taken: set[tuple[str, str]] = set()
        for entity in store.iter_entities():
            taken.add((entity.project, entity.name))
            if found := _entity_secrets(entity):
                entities.append((entity, found))
        relations = [(relation, found) for relation in store.iter_relations() if (found := _relation_secrets(relation))]
        scan.holders += [Holder(_where(entity), tuple(found)) for entity, found in entities]
        scan.holders += [Holder(_relation_where(relation), tuple(found)) for relation, found in relations]
        for entity, _ in entities:
            _fix_entity(graph, entity, now, taken)
        for relation, _ in relations:
            _replace_relation(graph, relation)
    # After the fix is recorded: its own change names the facts it removed, secrets and all.
    with graph.working_in(EVERY), store.write(EVERY):
        scan.changes = store.rewrite_changes(_redacted)
    graph.store.compact(thorough=True)
    return scan


def _fix_entity(graph: KnowledgeGraph, entity: Entity, now: str, taken: set[tuple[str, str]]) -> None:
    store = graph.store
    cleaned = clean_entity(entity, "redact", [])
    if cleaned.name != entity.name:
        name = numbered(cleaned.name, lambda candidate: (entity.project, candidate) in taken)
        taken.discard((entity.project, entity.name))
        taken.add((entity.project, name))
        cleaned = replace(cleaned, name=name)
    current = records_of(entity)
    history = history_of(entity)
    kept: list[ObservationRecord] = []
    fresh: list[ObservationRecord] = []
    for record in current:
        text, kinds = redact(record.content)
        if not kinds:
            kept.append(record)
            continue
        if any(other.content == text for other in (*kept, *fresh)) or text in entity.observations:
            continue  # two facts that differed only by their secrets: one is kept
        # A new version in the old one's place of the story, the old one not kept: it held the secret.
        fresh.append(
            replace(
                record,
                id=next_id([*current, *history, *fresh]),
                content=text,
                version=record.version + 1,
                supersedes=record.id,
                created_at=now,
            )
        )
    past = [replace(record, content=redact(record.content)[0]) for record in history]
    # Rows keep their order and new ones are appended: the redacted facts come last.
    after = with_records(
        Entity(cleaned.name, cleaned.entity_type, (), cleaned.extra, entity.project), [*kept, *fresh], past
    )
    after = replace(after, extra=touched(after.extra, now))
    scope = Scope(entity.project)
    with store.write(scope), graph.working_in(scope, graph.reach):
        relations = store.relations_touching([entity.name]) if cleaned.name != entity.name else []
        if relations:
            store.delete_relations([relation.key for relation in relations])
        store_entity(store, entity, after)
        if relations:
            store.insert_relations([clean_relation(relation, "redact", []) for relation in relations])


def _replace_relation(graph: KnowledgeGraph, relation: Relation) -> None:
    store = graph.store
    scope = Scope(relation.project)
    with store.write(scope), graph.working_in(scope, graph.reach):
        store.delete_relations([relation.key])
        cleaned = clean_relation(relation, "redact", [])
        if not store.existing_relations([cleaned.key]):
            store.insert_relations([cleaned])
