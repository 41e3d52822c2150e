"""Context about named entities for a model (spec 003's get_context_info).

Given a few names (or aliases), the model gets those entities, the entities directly related to
them, the relations among all of these, and each entity's observations ordered for
reading: current facts first, recent history next, the rest last, archived left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.core.models import Entity, Graph
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observation_text import context_order

__all__ = ["ContextInfo", "context_info"]


@dataclass(frozen=True, slots=True)
class ContextInfo:
    """The context of some entities.

    Attributes:
        graph: the named entities first (in the order asked), then their neighbours (in
            creation order), and the relations among all of them.
        not_found: names asked for that are not entities.
    """

    graph: Graph
    not_found: tuple[str, ...]


def context_info(graph: KnowledgeGraph, names: Sequence[str]) -> ContextInfo:
    """The named entities, their direct neighbours and the relations among them."""
    graph.check_names("entityNames", names)
    with graph.reading():
        # A name given by alias stands for its entity.
        resolved = graph.resolve_names(list(dict.fromkeys(names)))
        given = {resolved.get(name, name): name for name in reversed(names)}
        wanted = list(dict.fromkeys(resolved.get(name, name) for name in names))
        found: dict[str, Entity] = {}
        for entity in graph.store.get_entities(wanted):
            found.setdefault(entity.name, entity)
        touching = graph.store.relations_touching(list(found))
        neighbour_names = [name for relation in touching for name in (relation.from_, relation.to) if name not in found]
        neighbours: dict[str, Entity] = {}
        for entity in graph.store.get_entities(list(dict.fromkeys(neighbour_names))):
            neighbours.setdefault(entity.name, entity)
        entities = [found[name] for name in wanted if name in found] + list(neighbours.values())
        present = {entity.name for entity in entities}
        # Every relation among the returned entities, neighbour to neighbour included,
        # in creation order.
        relations = tuple(
            relation
            for relation in graph.store.relations_touching(list(present))
            if relation.from_ in present and relation.to in present
        )
    ordered = tuple(
        Entity(e.name, e.entity_type, tuple(context_order(e.observations)), e.extra, e.project) for e in entities
    )
    return ContextInfo(graph.graph_of(ordered, relations), tuple(given[name] for name in wanted if name not in found))
