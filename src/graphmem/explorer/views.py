"""What the explorer's reads answer: plain JSON-ready dicts from the graph, each bounded.

Every function here reads the memory and runs where the store's calls run
(`AppState.run`). None of them reads more than a page: the overview is the same few
index walks on a hundred entities or a million, and a neighbourhood is a page of one
entity's relations however many it has. The shapes are the explorer's own (the page is
their only reader); `docs/explorer.md` describes them.

Each runs in the scope of its request (`KnowledgeGraph.working_in`, see `scopes.py`). When
that scope can show entities of more than one project, every entity listed says its project.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, Relation
from graphmem.core.projects import SHARED, project_name
from graphmem.domain.duplicates import find_duplicates
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.history import ChangeQuery, describe, list_changes
from graphmem.domain.navigation import get_entity
from graphmem.domain.observation_text import parse_observation
from graphmem.domain.observations import ObservationRecord, history_of, records_of
from graphmem.domain.search import query_terms
from graphmem.domain.traversal import shortest_path
from graphmem.storage.base import EntitySummary

__all__ = [
    "HUBS",
    "MOST_FACTS",
    "MOST_HISTORY",
    "MOST_PAGE",
    "MOST_SEARCH",
    "PATH_DEPTH",
    "entities_of_type",
    "entity_detail",
    "neighbours",
    "overview",
    "path_between",
    "search",
    "session_counts",
]

HUBS = 40
"""The most connected entities the overview draws."""
TYPES_SHOWN = 24
"""The entity and relation types the overview lists; the rest are counted."""
MOST_RELATIONS = 400
"""The most relations one answer draws between the entities it holds."""
MOST_PAGE = 100
"""The largest page of entities or neighbours one answer holds."""
MOST_OFFSET = 1_000_000_000
"""The largest offset a page may start at (past 2^63 a database cannot even take the number)."""
MOST_SEARCH = 50
"""The most results one search answers with."""
PATH_DEPTH = 6
"""The longest path looked for, in hops."""
MOST_FACTS = 200
"""The current facts one entity's answer holds (the first ones); the rest are counted."""
MOST_HISTORY = 50
"""The earlier versions one entity's answer holds (the newest); the rest are counted."""


def _card(summary: EntitySummary, places: dict[str, str] | None) -> dict[str, Any]:
    card: dict[str, Any] = {"name": summary.name, "type": summary.entity_type, "degree": summary.degree}
    if places is not None:
        card["project"] = places.get(summary.name)
    return card


def _shows_projects(graph: KnowledgeGraph) -> bool:
    """Whether the call's answers say where each entity lives: unless its scope sees the shared
    space alone, or the memory holds no project (its answers stay as they were before projects)."""
    return graph.scope.project != SHARED and graph.store.holds_projects()


def _places(entities: Iterable[Entity]) -> dict[str, str]:
    """Each entity's name with its project's short name. Seen across every project a name may be
    two entities, which the page draws as one: that one names both projects."""
    held: dict[str, list[str]] = {}
    for entity in entities:
        held.setdefault(entity.name, []).append(project_name(entity.project))
    return {name: ", ".join(sorted(set(names))) for name, names in held.items()}


def _places_of(graph: KnowledgeGraph, summaries: list[EntitySummary]) -> dict[str, str] | None:
    """`_places` of the listed entities, read only when the answer says them (a memory without
    projects pays nothing for them)."""
    if not _shows_projects(graph):
        return None
    return _places(graph.store.get_entities(list(dict.fromkeys(summary.name for summary in summaries))))


def _relation(relation: Relation) -> dict[str, str]:
    return {"from": relation.from_, "to": relation.to, "relationType": relation.relation_type}


def _relations_among(graph: KnowledgeGraph, names: Iterable[str]) -> list[dict[str, str]]:
    return [_relation(relation) for relation in graph.store.relations_among(list(names), MOST_RELATIONS)]


def session_counts(graph: KnowledgeGraph) -> dict[str, int]:
    """How many entities, relations and facts the memory holds."""
    counts = graph.counts()
    return {"entities": counts.entities, "relations": counts.relations, "observations": counts.observations}


def _type_counts(pairs: list[tuple[str, int]]) -> tuple[list[dict[str, Any]], int]:
    shown = [{"type": kind, "count": count} for kind, count in pairs[:TYPES_SHOWN]]
    return shown, max(0, len(pairs) - TYPES_SHOWN)


def overview(graph: KnowledgeGraph) -> dict[str, Any]:
    """The memory at a glance: its counts, its commonest types, and its most connected entities."""
    with graph.reading():
        counts = session_counts(graph)
        entity_types, more_entity_types = _type_counts(graph.store.entity_type_counts())
        relation_types, more_relation_types = _type_counts(graph.store.relation_type_counts())
        hubs = graph.store.most_connected(None, 0, HUBS)
        relations = _relations_among(graph, (hub.name for hub in hubs))
        places = _places_of(graph, hubs)
    return {
        "counts": counts,
        "entityTypes": entity_types,
        "moreEntityTypes": more_entity_types,
        "relationTypes": relation_types,
        "moreRelationTypes": more_relation_types,
        "hubs": [_card(hub, places) for hub in hubs],
        "relations": relations,
    }


def _check_page(offset: int, limit: int) -> None:
    if not 0 <= offset <= MOST_OFFSET:
        raise InvalidInputError("offset", f"is {offset}; give a number from 0 to {MOST_OFFSET:,}.")
    if not 1 <= limit <= MOST_PAGE:
        raise InvalidInputError("limit", f"is {limit}; give a number from 1 to {MOST_PAGE}.")


def entities_of_type(graph: KnowledgeGraph, entity_type: str, offset: int, limit: int) -> dict[str, Any]:
    """A page of one type's entities, most connected first, with the relations among them."""
    graph.check_names("type", [entity_type])
    _check_page(offset, limit)
    with graph.reading():
        total = dict(graph.store.entity_type_counts()).get(entity_type, 0)
        page = graph.store.most_connected(entity_type, offset, limit)
        relations = _relations_among(graph, (summary.name for summary in page))
        places = _places_of(graph, page)
    return {
        "type": entity_type,
        "total": total,
        "offset": offset,
        "entities": [_card(summary, places) for summary in page],
        "relations": relations,
    }


def _best_fact(entity: Entity, terms: list[str]) -> str | None:
    """The fact that best shows why the entity matched: the first holding the most query words."""
    best, best_score = None, 0
    for fact in entity.observations:
        folded = fact.lower()
        score = sum(term in folded for term in terms)
        if score > best_score:
            best, best_score = fact, score
    return best


def search(graph: KnowledgeGraph, query: str, entity_type: str | None, limit: int) -> dict[str, Any]:
    """The ranked search of `search_nodes` (words, and meaning where it is on), one page."""
    if not query.strip():
        raise InvalidInputError("q", "is empty; type a word, a name or a question.")
    if not 1 <= limit <= MOST_SEARCH:
        raise InvalidInputError("limit", f"is {limit}; give a number from 1 to {MOST_SEARCH}.")
    # One more than shown tells whether there are more.
    page = graph.search_page(query, entity_type=entity_type, limit=limit + 1)
    # Seen across every project, the ranked search names a name once per project that holds it,
    # and each naming brings every entity of that name: each entity is shown once.
    entities = list({(entity.name, entity.project): entity for entity in page.graph.entities}.values())
    terms = query_terms(query)
    with graph.reading():
        degrees = _degrees(graph, [entity.name for entity in entities[:limit]])
        shows_projects = _shows_projects(graph)
    results = []
    for entity in entities[:limit]:
        result = {
            "name": entity.name,
            "type": entity.entity_type,
            "degree": degrees.get(entity.name, 0),
            "match": _best_fact(entity, terms),
        }
        if shows_projects:
            # Each hit is one entity: two projects' READMEs are two hits, each with its own.
            result["project"] = project_name(entity.project)
        results.append(result)
    return {"query": query, "results": results, "more": len(entities) > limit}


def _degrees(graph: KnowledgeGraph, names: list[str]) -> dict[str, int]:
    """How many relations touch each name, read a page at a time (at most `MOST_PAGE` names)."""
    degrees: dict[str, int] = {}
    for name in names[:MOST_PAGE]:
        _, outgoing = graph.store.find_relations(name, None, None, 0, 0)
        _, incoming = graph.store.find_relations(None, name, None, 0, 0)
        _, to_itself = graph.store.find_relations(name, name, None, 0, 0)
        degrees[name] = outgoing + incoming - to_itself
    return degrees


def _cards_of(
    names: list[str], entities: list[Entity], degrees: dict[str, int], places: dict[str, str] | None
) -> list[dict[str, Any]]:
    """A card for each name: its type (None for a name a relation points at that is no entity),
    its degree, and its project when the answer says them."""
    known = {entity.name: entity for entity in entities}
    cards = []
    for name in names:
        card: dict[str, Any] = {
            "name": name,
            "type": known[name].entity_type if name in known else None,
            "degree": degrees[name],
        }
        if places is not None:
            card["project"] = places.get(name)
        cards.append(card)
    return cards


def _fact(record: ObservationRecord) -> dict[str, Any]:
    status = parse_observation(record.content).status
    return {
        "id": record.id,
        "text": record.content,
        "version": record.version,
        "status": status.capitalize() if status else None,
        "author": record.author,
        "createdAt": record.created_at,
        "supersedes": record.supersedes,
        "supersededBy": record.superseded_by,
        "current": record.current,
    }


def entity_detail(graph: KnowledgeGraph, name: str) -> dict[str, Any]:
    """One entity (by name or alias): its type, aliases, facts with their metadata, and their history.

    Raises:
        EntityNotFoundError: no entity has that name or alias.
    """
    with graph.reading():
        entity = get_entity(graph, name)
        _, outgoing = graph.store.find_relations(entity.name, None, None, 0, 0)
        _, incoming = graph.store.find_relations(None, entity.name, None, 0, 0)
        # A relation to itself is both outgoing and incoming: it counts once in the degree.
        _, to_itself = graph.store.find_relations(entity.name, entity.name, None, 0, 0)
    extra = entity.extra or {}

    def text(key: str) -> str | None:
        value = extra.get(key)
        return value if isinstance(value, str) else None

    records, history = records_of(entity), history_of(entity)
    return {
        "name": entity.name,
        "type": entity.entity_type,
        "project": project_name(entity.project),
        "projectKey": entity.project,
        "aliases": list(entity.aliases),
        "createdAt": text("createdAt"),
        "updatedAt": text("updatedAt"),
        "createdBy": text("createdBy"),
        "updatedBy": text("updatedBy"),
        "degree": outgoing + incoming - to_itself,
        "facts": [_fact(record) for record in records[:MOST_FACTS]],
        "factsTotal": len(records),
        "history": [_fact(record) for record in reversed(history[-MOST_HISTORY:])],
        "historyTotal": len(history),
        "relations": {"outgoing": outgoing, "incoming": incoming},
    }


def neighbours(graph: KnowledgeGraph, name: str, relation_type: str | None, offset: int, limit: int) -> dict[str, Any]:
    """A page of the entities one hop from `name`, either way, with the relations to them.

    The pages run through the entity's outgoing relations, then its incoming ones, each in
    creation order: `nextOffset` is where the next page starts (None after the last), and
    `remaining` about how many relations are left for it.

    Raises:
        EntityNotFoundError: no entity has that name or alias.
    """
    _check_page(offset, limit)
    if relation_type is not None:
        graph.check_names("relationType", [relation_type])
    with graph.reading():
        name = get_entity(graph, name).name
        outgoing, out_total = graph.store.find_relations(name, None, relation_type, offset, limit)
        in_offset = max(0, offset - out_total)
        incoming, in_total = graph.store.find_relations(None, name, relation_type, in_offset, limit - len(outgoing))
        _, to_itself = graph.store.find_relations(name, name, relation_type, 0, 0)
        next_offset = offset + len(outgoing) + len(incoming)
        # A relation to itself is found both ways: it is shown once, going out.
        relations = outgoing + [relation for relation in incoming if relation.from_ != name]
        others = list(
            dict.fromkeys(relation.to if relation.from_ == name else relation.from_ for relation in relations)
        )
        found = graph.store.get_entities(others)
        degrees = _degrees(graph, others)
        places = _places(found) if _shows_projects(graph) else None
    cards = _cards_of(others, found, degrees, places)
    positions = out_total + in_total
    return {
        "name": name,
        "total": positions - to_itself,
        "offset": offset,
        "nextOffset": next_offset if next_offset < positions else None,
        "remaining": max(0, positions - next_offset),
        "neighbours": cards,
        "relations": [_relation(relation) for relation in relations],
    }


def path_between(graph: KnowledgeGraph, start: str, end: str) -> dict[str, Any]:
    """A shortest path between two entities (names or aliases), relations followed either way.

    Raises:
        EntityNotFoundError: either end is not an entity.
    """
    found = shortest_path(graph, start, end, PATH_DEPTH, most_depth=PATH_DEPTH)
    with graph.reading():
        entities = graph.store.get_entities(list(found.names))
        degrees = _degrees(graph, list(found.names))
        places = _places(entities) if _shows_projects(graph) else None
    cards = _cards_of(list(found.names), entities, degrees, places)
    if found.found or found.bound is None:
        why = None if found.found else f"{start} and {end} are not connected."
    elif found.bound.name == "maxDepth":
        why = f"No path of {PATH_DEPTH} steps or fewer joins them."
    else:
        why = f"The search stopped after {found.bound.limit:,} entities without finding a path."
    return {
        "found": found.found,
        "why": why,
        "maxDepth": PATH_DEPTH,
        "entities": cards,
        "relations": [_relation(relation) for relation in found.relations],
    }


TIMELINE = 20
"""Changes an entity's timeline shows a page."""


def entity_changes(graph: KnowledgeGraph, name: str | None, via: str | None, before: int | None) -> dict[str, Any]:
    """An entity's timeline: the changes that named it (or those made through `via`: the last
    import's), newest first, a page at a time (`before`: the number of the last change of the
    page before)."""
    page = list_changes(graph, ChangeQuery(via=via, entity=name, before=before, limit=TIMELINE))
    answer: dict[str, Any] = {
        "name": name,
        "changes": [
            {
                "seq": change.seq,
                "at": change.at,
                "by": change.author or "local",
                "via": change.via,
                "did": describe(change),
            }
            for change in page.changes
        ],
    }
    if page.more and page.changes:
        answer["before"] = page.changes[-1].seq
    return answer


DUPLICATES_PAGE = 50
"""Pairs the duplicates view shows at a time."""


def duplicate_pairs(graph: KnowledgeGraph, offset: int) -> dict[str, Any]:
    """The entities that probably name one thing (domain/duplicates.py), best reason first, a
    page at a time: each pair's newer name first, to be merged into the older."""
    found = find_duplicates(graph)
    page = found[offset : offset + DUPLICATES_PAGE]
    return {
        "pairs": [
            {"name": item.name, "existing": item.existing, "type": item.entity_type, "why": item.why} for item in page
        ],
        "total": len(found),
        "offset": offset,
    }
