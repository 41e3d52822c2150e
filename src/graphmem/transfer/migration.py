"""Moving a whole memory from one store to another (a SQLite file to PostgreSQL, say), as it is.

An import merges a file into a memory through the tools' rules; a migration copies a
memory into an empty one record for record: every entity with its observations and
everything its extra keys hold (aliases, timestamps, observation records and their
earlier versions, authors), every relation with its own. Entities and relations keep
their order. The source is read from one snapshot, and the target is written in one
transaction, so a migration that fails or is stopped leaves the target empty.

Vectors for search by meaning are not copied: the target embeds the texts itself (its
server in the background, or `graphmem embed`), with its own model and index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import islice
from typing import TypeVar, cast

from graphmem.core.errors import GraphmemError
from graphmem.core.models import Entity
from graphmem.core.projects import Scope
from graphmem.domain.observations import history_of
from graphmem.domain.secret_policy import NamesWithSecrets, Policy, Redaction
from graphmem.storage.base import Store
from graphmem.transfer.streams import Progress

__all__ = ["MigrationReport", "TargetNotEmptyError", "migrate"]

# Records go to the target in chunks of this size, as in an import.
_CHUNK = 1000

T = TypeVar("T")


class TargetNotEmptyError(GraphmemError):
    """The memory a migration would write into already holds something."""


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What a migration copied.

    Attributes:
        earlier_versions: superseded and archived facts, kept in the entities' history.
        merged: entities of the source that shared a name with an earlier one (a JSONL
            file may hold such); each was merged into the first, as the official server reads them.
    """

    entities: int
    observations: int
    earlier_versions: int
    relations: int
    merged: int = 0
    redacted_names: tuple[Redaction, ...] = ()
    """Secrets taken out of entity names (the target's store says what else it redacted)."""


def _chunks(items: Iterable[T]) -> Iterator[list[T]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, _CHUNK)):
        yield chunk


def _check_empty(target: Store) -> None:
    held = target.counts()
    if held.entities or held.relations:
        raise TargetNotEmptyError(
            f"{target.location} already holds {held.entities} entities and {held.relations} relations; "
            "a migration copies a memory into an empty one. Choose a new memory (a new file or an empty "
            "database), or merge into this one with `graphmem export` and `graphmem import`."
        )


def _source_names(source: Store) -> Callable[[str], bool]:
    """Whether the source holds an entity of that name, in any project."""
    with source.read():
        names = {row[0] for row in source.entity_names()}
    return names.__contains__


def migrate(
    source: Store, target: Store, *, secrets: Policy | None = None, progress: Progress | None = None
) -> MigrationReport:
    """Copy every entity and relation of `source` into `target`, which must hold nothing.

    Under `secrets` redact (by default the target's policy, when it has one: a RecordingStore),
    an entity name holding a secret is written redacted, numbered past every other name
    (`NamesWithSecrets`), its relations following it; the target's store redacts the other texts.

    Raises:
        TargetNotEmptyError: the target holds entities or relations; nothing was written.
    """
    with target.read():
        _check_empty(target)
    entities = observations = earlier = relations = merged = 0
    # A name is an entity's within its project, a key a relation's (graphmem.core.projects).
    names: set[tuple[str, str]] = set()
    later: list[Entity] = []
    keys: set[tuple[str, tuple[str, str, str]]] = set()
    if secrets is None:
        secrets = cast(Policy, getattr(target, "secrets", "allow"))
    named = NamesWithSecrets(secrets, _source_names(source) if secrets == "redact" else None)
    with source.read(), target.write(), target.bulk_insert():
        # Again, now that the target is locked for writing: another server may have written
        # to it since it was looked at.
        _check_empty(target)
        for chunk in _chunks(source.iter_entities()):
            fresh: dict[tuple[str, str], Entity] = {}
            for entity in chunk:
                if named(entity.name) != entity.name:
                    entity = replace(entity, name=named(entity.name))
                place = (entity.project, entity.name)
                if place in names or place in fresh:
                    # Only a JSONL file holds two entities of one name in one project: the
                    # official server reads them as one, the first with the later ones' new facts.
                    merged += 1
                    later.append(entity)
                    continue
                fresh[place] = entity
            target.insert_entities(list(fresh.values()))
            names.update(fresh)
            entities += len(fresh)
            observations += sum(len(entity.observations) for entity in fresh.values())
            earlier += sum(len(history_of(entity)) for entity in fresh.values())
            for entity in later:
                # In its own project, where the name is one entity.
                with target.write(Scope(entity.project)):
                    have = set(target.observations_of(entity.name) or ())
                    new = [text for text in dict.fromkeys(entity.observations) if text not in have]
                    target.append_observations(entity.name, new)
                observations += len(new)
            later.clear()
            if progress is not None:
                progress(len(chunk))
        for links in _chunks(source.iter_relations()):
            links = [replace(link, from_=named(link.from_), to=named(link.to)) for link in links]
            unique = [relation for relation in dict.fromkeys(links) if (relation.project, relation.key) not in keys]
            keys.update((relation.project, relation.key) for relation in unique)
            target.insert_relations(unique)
            relations += len(unique)
            if progress is not None:
                progress(len(links))
    return MigrationReport(entities, observations, earlier, relations, merged, tuple(named.redacted))
