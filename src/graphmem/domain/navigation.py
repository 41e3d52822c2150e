"""Looking entities up by name or alias, and the relations around them (spec 004's entity tools).

Every name a caller gives passes through `canonical_names`, so an alias works wherever a
name does. Lookups read only the rows they need through indexed store queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.core.errors import EntityNotFoundError, InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import ObservationRecord, history_of, records_of

__all__ = [
    "EntityDescription",
    "batch_get",
    "canonical_names",
    "describe",
    "get_entity",
    "observation_history",
    "relations_matching",
]


@dataclass(frozen=True, slots=True)
class EntityDescription:
    """One entity with its incident relations, in creation order.

    Attributes:
        relations: the relations touching it with their direction seen from the entity:
            `outgoing` (it is `from`), `incoming` (it is `to`) or `self` (both).
        neighbours: the distinct names at the other end of its relations, first seen first.
    """

    entity: Entity
    relations: tuple[tuple[Relation, str], ...]
    neighbours: tuple[str, ...]

    @property
    def degree(self) -> int:
        return len(self.relations)


# -- names --------------------------------------------------------------------------------


def canonical_names(graph: KnowledgeGraph, names: Sequence[str]) -> list[str]:
    """The entity names meant by `names`, in order: an alias becomes its entity's name.

    Names that match nothing are kept as given. Call it inside the read transaction
    that uses the names.
    """
    resolved = graph.resolve_names(names)
    return [resolved.get(name, name) for name in names]


def require_entity(graph: KnowledgeGraph, name: str) -> Entity:
    found = graph.store.get_entities([name])
    if not found:
        raise EntityNotFoundError(name, EntityNotFoundError.READ_HINT)
    return found[0]


# -- entities ------------------------------------------------------------------------------


def get_entity(graph: KnowledgeGraph, name: str) -> Entity:
    """One entity by name or alias.

    Raises:
        EntityNotFoundError: no entity has that name or alias.
    """
    graph.check_names("name", [name])
    with graph.reading():
        (canonical,) = canonical_names(graph, [name])
        return require_entity(graph, canonical)


def batch_get(graph: KnowledgeGraph, names: Sequence[str]) -> list[Entity | None]:
    """The entities named (by name or alias), in the order asked; None for a name not found."""
    graph.check_names("names", names)
    with graph.reading():
        canonical = canonical_names(graph, names)
        found = {entity.name: entity for entity in reversed(graph.store.get_entities(list(dict.fromkeys(canonical))))}
    return [found.get(name) for name in canonical]


def describe(graph: KnowledgeGraph, name: str) -> EntityDescription:
    """An entity with every relation touching it and the names at their other ends.

    Raises:
        EntityNotFoundError: no entity has that name or alias.
    """
    graph.check_names("name", [name])
    with graph.reading():
        (canonical,) = canonical_names(graph, [name])
        entity = require_entity(graph, canonical)
        touching = graph.store.relations_touching([canonical])
    relations = tuple((relation, _direction(relation, canonical)) for relation in touching)
    neighbours = dict.fromkeys(_other_end(relation, canonical) for relation in touching)
    neighbours.pop(canonical, None)
    return EntityDescription(entity, relations, tuple(neighbours))


def _direction(relation: Relation, name: str) -> str:
    if relation.from_ == relation.to:
        return "self"
    return "outgoing" if relation.from_ == name else "incoming"


def _other_end(relation: Relation, name: str) -> str:
    return relation.to if relation.from_ == name else relation.from_


def relations_matching(
    graph: KnowledgeGraph,
    from_: str | None,
    to: str | None,
    relation_type: str | None,
    offset: int = 0,
    limit: int | None = None,
) -> tuple[list[Relation], int]:
    """One page of the relations matching every given field, and how many match in all.

    An endpoint may be given by an entity's alias. A field left out (None or empty)
    matches any value, as spec 004 says.
    """
    for field, value in (("from", from_), ("to", to), ("relationType", relation_type)):
        if value:
            graph.check_names(field, [value])
    graph.check_page(None, offset, limit)
    with graph.reading():
        ends = [name or None for name in (from_, to)]
        given = [name for name in ends if name is not None]
        resolved = dict(zip(given, canonical_names(graph, given), strict=True))
        start, end = (None if name is None else resolved[name] for name in ends)
        return graph.store.find_relations(start, end, relation_type or None, offset, limit)


def observation_history(graph: KnowledgeGraph, name: str, observation_id: str) -> tuple[str, list[ObservationRecord]]:
    """The version chain an observation belongs to, oldest first, and the entity's name.

    From any observation of the chain, current or superseded: the facts it corrected,
    itself, and those that corrected it.

    Raises:
        EntityNotFoundError: no entity has that name or alias.
        InvalidInputError: the entity has no observation with that id.
    """
    graph.check_names("entityName", [name])
    graph.check_names("observationId", [observation_id])
    with graph.reading():
        (canonical,) = canonical_names(graph, [name])
        entity = require_entity(graph, canonical)
    by_id = {record.id: record for record in (*history_of(entity), *records_of(entity))}
    record = by_id.get(observation_id)
    if record is None:
        raise InvalidInputError(
            "observationId",
            f"{observation_id!r} is not an observation of {canonical!r}; get_entity lists its observations "
            "with their ids.",
        )
    # Back to the first version, then forward to the current one; `seen` stops a cycle a
    # hand-edited file might hold.
    seen = {record.id}
    while record.supersedes in by_id and record.supersedes not in seen:
        record = by_id[str(record.supersedes)]
        seen.add(record.id)
    chain = [record]
    seen = {record.id}
    while chain[-1].superseded_by in by_id and chain[-1].superseded_by not in seen:
        following = by_id[str(chain[-1].superseded_by)]
        seen.add(following.id)
        chain.append(following)
    return canonical, chain
