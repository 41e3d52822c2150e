"""The change log's value types: what one write did, as a list of operations (design/projects-and-time.md).

Every write transaction that changes the memory is recorded as one `Change`: when, by whom,
through what, in which project, and its operations, each a JSON object naming what it touched
by (project, name). An operation holds what is needed to take it back from the memory as it
stands after it, and nothing more: a created entity is named (taking it back deletes it), a
deleted one is kept whole, an updated one keeps what it was before. That is what seeing the
memory as it was and undoing a change read; the memory itself holds the after.

    {"op": "create_entities", "project": "", "names": ["Ada", ...]}
    {"op": "delete_entity", "entity": {"name": ..., "entityType": ..., "observations": [...],
                                       "extra": {...} | null, "project": ""}}
    {"op": "add_facts", "project": "", "name": "Ada", "facts": ["..."]}       appended, in order
    {"op": "remove_facts", "project": "", "name": "Ada", "facts": [[3, "...", "employer"?], ...]}
                                          each with its place before (and its attribute,
                                          validFrom and validUntil, when it had them)
    {"op": "update_entity", "project": "", "name": "Ada Lovelace",           its name after
     "before": {"name": "Ada", "entityType": "person", "extra": {...} | null}}
    {"op": "create_relations", "project": "", "keys": [[from, to, relationType], ...]}
    {"op": "delete_relation", "relation": {"from": ..., "to": ..., "relationType": ...,
                                           "extra": {...} | null, "project": ""}}
    {"op": "move_entity", "name": "Ada", "from": "", "to": "github.com/acme/api"}
    {"op": "move_relation", "key": [from, to, type], "from": "", "to": "..."}
    {"op": "undo", "changes": [seq, ...]}              notes: what an undo took back,
    {"op": "forget", "before": time, "changes": n}     what the retention deleted
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphmem.core.models import Entity, Relation

__all__ = [
    "Change",
    "ChangeFilter",
    "ChangePage",
    "NewChange",
    "Op",
    "entity_record",
    "names_touched",
    "relation_record",
]

Op = dict[str, Any]
"""One operation of a change (see the module)."""


def entity_record(entity: Entity) -> dict[str, Any]:
    """An entity whole, as a `delete_entity` operation keeps it."""
    return {
        "name": entity.name,
        "entityType": entity.entity_type,
        "observations": list(entity.observations),
        "extra": entity.extra,
        "project": entity.project,
    }


def relation_record(relation: Relation) -> dict[str, Any]:
    """A relation whole, as a `delete_relation` operation keeps it."""
    return {
        "from": relation.from_,
        "to": relation.to,
        "relationType": relation.relation_type,
        "extra": relation.extra,
        "project": relation.project,
    }


def names_touched(ops: list[Op]) -> Iterator[tuple[str, str]]:
    """Each (project, entity name) an operation names, for finding an entity's changes: a
    relation names both its ends (in its project); a move, both of its projects."""
    for op in ops:
        kind = op["op"]
        if kind == "delete_entity":
            yield op["entity"]["project"], op["entity"]["name"]
        elif kind == "update_entity":
            yield op["project"], op["name"]
            if op["before"]["name"] != op["name"]:
                yield op["project"], op["before"]["name"]
        elif kind in ("add_facts", "remove_facts"):
            yield op["project"], op["name"]
        elif kind == "create_entities":
            for name in op["names"]:
                yield op["project"], name
        elif kind == "create_relations":
            for key in op["keys"]:
                yield op["project"], key[0]
                yield op["project"], key[1]
        elif kind == "delete_relation":
            relation = op["relation"]
            yield relation["project"], relation["from"]
            yield relation["project"], relation["to"]
        elif kind == "move_entity":
            yield op["from"], op["name"]
            yield op["to"], op["name"]
        elif kind == "move_relation":
            for project in (op["from"], op["to"]):
                yield project, op["key"][0]
                yield project, op["key"][1]


@dataclass(frozen=True, slots=True)
class NewChange:
    """A change as the recorder hands it to the store, which gives it its number and time."""

    author: str | None
    """The token's name; None for a local caller."""
    via: str
    """The tool or command that made it ("add_observations", "explorer", "import", ...)."""
    project: str | None
    """The project the write ran in; None for every project."""
    ops: list[Op]


@dataclass(frozen=True, slots=True)
class Change:
    """A recorded change."""

    seq: int
    """Its number: later changes have higher ones, in the order they committed."""
    at: str
    """When, as ISO 8601 UTC with milliseconds; never earlier than the change before it."""
    author: str | None
    via: str
    project: str | None
    ops: list[Op]


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    """Which changes `Store.list_changes` gives: all of the given conditions hold.

    Attributes:
        since: at or after this instant (ISO 8601 UTC, as `Change.at`).
        until: before this instant.
        author: made by this token ("" for local callers).
        via: made through this tool or command.
        names: naming one of these entities (in a project the scope sees), each (name, after,
            upto): the entity had that name in the changes numbered above `after` (0: from the
            start) up to `upto`, the one that renamed it (None: it still has it).
        before: numbered below this (the page after one that ended there).
    """

    since: str | None = None
    until: str | None = None
    author: str | None = None
    via: str | None = None
    names: tuple[tuple[str, int, int | None], ...] = ()
    before: int | None = None


@dataclass(frozen=True, slots=True)
class ChangePage:
    """Changes newest first, and whether older ones match too."""

    changes: list[Change]
    more: bool
