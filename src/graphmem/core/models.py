"""The knowledge graph's value types: plain frozen dataclasses with no I/O.

`to_wire()` gives the official JSON shape, with its camelCase keys in its key order,
so every layer that speaks JSON (tools, the JSONL file, exports) produces the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphmem.core.contradictions import Clash
from graphmem.core.projects import project_name

__all__ = [
    "AddedObservations",
    "DeleteOutcome",
    "Entity",
    "Graph",
    "ObservationAddition",
    "ObservationDeletion",
    "Relation",
]


@dataclass(frozen=True, slots=True)
class Entity:
    """A named node with a type and the facts (observations) known about it."""

    name: str
    entity_type: str
    observations: tuple[str, ...] = ()
    extra: dict[str, Any] | None = field(default=None, compare=False)
    """Keys from other formats that graphmem keeps but the official tools do not show
    (a fork's `aliases`, `createdAt`, `version`); written back to JSONL files unchanged."""
    project: str = ""
    """The project the entity belongs to; "" for the shared space (graphmem.core.projects).
    Not part of the official shape: the tools say it only when more than one project is shown."""

    @property
    def aliases(self) -> tuple[str, ...]:
        """Other names the entity answers to: `extra["aliases"]`, a list of names or a single name."""
        aliases = (self.extra or {}).get("aliases")
        if isinstance(aliases, str):
            return (aliases,)
        if isinstance(aliases, list):
            return tuple(alias for alias in aliases if isinstance(alias, str))
        return ()

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "entityType": self.entity_type, "observations": list(self.observations)}


@dataclass(frozen=True, slots=True)
class Relation:
    """A directed, typed edge between two entity names (the endpoints may not exist)."""

    from_: str
    to: str
    relation_type: str
    extra: dict[str, Any] | None = field(default=None, compare=False)
    """Keys from other formats kept but not shown, as for `Entity.extra`."""
    project: str = ""
    """The project the relation was written in; its endpoint names are those of that project
    and of the shared space ("" for the shared space itself)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity of a relation: two relations with the same key are the same relation."""
        return (self.from_, self.to, self.relation_type)

    def to_wire(self) -> dict[str, Any]:
        return {"from": self.from_, "to": self.to, "relationType": self.relation_type}


@dataclass(frozen=True, slots=True)
class Graph:
    """A set of entities and the relations that touch them."""

    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()
    labelled: bool = field(default=False, compare=False)
    """Read across every project: the wire form says each entity's and relation's project when
    they come from more than one (the official shape otherwise)."""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "entities": [entity.to_wire() for entity in self.entities],
            "relations": [relation.to_wire() for relation in self.relations],
        }
        shown = {entity.project for entity in self.entities} | {relation.project for relation in self.relations}
        if self.labelled and len(shown) > 1:
            # Lists beside the official ones, item for item: each entity keeps its official shape.
            wire["projects"] = [_project_label(entity.project) for entity in self.entities]
            wire["relationProjects"] = [_project_label(relation.project) for relation in self.relations]
        return wire


def _project_label(project: str) -> str:
    """A project key as an answer shows it: its short name, "shared" for the shared space."""
    return project_name(project)


@dataclass(frozen=True, slots=True)
class GraphPage:
    """One page of a read: its graph, where it starts, and how many entities match in all."""

    graph: Graph
    offset: int
    total_entities: int


@dataclass(frozen=True, slots=True)
class EntityOutline:
    """An entity without its observations: what it is called, its type, and how much it holds."""

    name: str
    entity_type: str
    observation_count: int
    relation_count: int


@dataclass(frozen=True, slots=True)
class OutlinePage:
    """One page of entity outlines, where it starts, and how many entities match in all."""

    outlines: tuple[EntityOutline, ...]
    offset: int
    total_entities: int


@dataclass(frozen=True, slots=True)
class ObservationAddition:
    """Observations to append to one existing entity.

    Attributes:
        supersedes: for each content, in order, the id of the current observation it
            corrects (or None); shorter than `contents` when the last ones correct nothing.
    """

    entity_name: str
    contents: tuple[str, ...]
    supersedes: tuple[str | None, ...] = ()
    attribute: str | None = None
    """What the one content sets (`employer`): it replaces the entity's current value of it."""
    valid_from: str | None = None
    valid_until: str | None = None
    """When the contents hold in the world (core/validity.py), as the caller wrote it."""


@dataclass(frozen=True, slots=True)
class ObservationDeletion:
    """Observations to remove from one entity."""

    entity_name: str
    observations: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AddedObservations:
    """What `add_observations` actually appended to one entity."""

    entity_name: str
    added_observations: tuple[str, ...]
    clashes: tuple[Clash, ...] = field(default=(), compare=False)
    """Current facts of the entity the added ones may contradict: said beside the official answer."""

    def to_wire(self) -> dict[str, Any]:
        return {"entityName": self.entity_name, "addedObservations": list(self.added_observations)}


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    """How much of a delete request matched something in memory.

    Attributes:
        requested: how many things the caller asked to delete.
        deleted: how many of them existed and are now gone.
        missing_entities: requested entity names that were not in memory.
    """

    requested: int
    deleted: int
    missing_entities: tuple[str, ...] = field(default=())
