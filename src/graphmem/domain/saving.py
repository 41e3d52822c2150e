"""save_memory (spec 001): entities with their facts and their relations, saved whole or not at all.

Models skip steps: asked to create entities and then relations, they forget the
relations. Here an entity cannot be saved without at least one relation, every
observation must be one short fact, and one invalid item saves nothing. A failed call
lists every problem (not just the first) with a suggestion, so the model can fix its
call and retry once.

Entities already in memory (by name or alias) are not duplicated: they gain the new
observations. Entities and relations carry spec 002's metadata (createdAt, updatedAt,
version) and spec 001's threadId, confidence and importance, kept in their extra keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphmem.core import validation
from graphmem.core.contradictions import Clash
from graphmem.core.limits import Limits
from graphmem.core.models import Entity, Relation
from graphmem.core.timestamps import new_metadata, now_iso, touched
from graphmem.domain import projects
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.observations import NewObservation, change_observations, new_records, with_records

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_ENTITY_IMPORTANCE",
    "DEFAULT_RELATION_IMPORTANCE",
    "EntityDraft",
    "Problem",
    "RelationDraft",
    "SaveOutcome",
    "entity_quality",
    "save_memory",
]

DEFAULT_CONFIDENCE = 1.0
DEFAULT_ENTITY_IMPORTANCE = 0.5
DEFAULT_RELATION_IMPORTANCE = 0.7


@dataclass(frozen=True, slots=True)
class RelationDraft:
    target_entity: str
    relation_type: str
    importance: float = DEFAULT_RELATION_IMPORTANCE


@dataclass(frozen=True, slots=True)
class EntityDraft:
    name: str
    entity_type: str
    observations: tuple[str, ...]
    relations: tuple[RelationDraft, ...]
    confidence: float = DEFAULT_CONFIDENCE
    importance: float = DEFAULT_ENTITY_IMPORTANCE
    attributes: tuple[tuple[str, str], ...] = ()
    """(attribute, fact) pairs: each fact replaces the entity's current one of its attribute."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a save_memory call was refused, in spec 001's shape."""

    entity: str
    problem: str
    suggestion: str
    observation: str | None = None
    relation: RelationDraft | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"error": "Validation failed", "entity": self.entity}
        if self.observation is not None:
            wire["observation"] = self.observation
        if self.relation is not None:
            wire["relation"] = {
                "targetEntity": self.relation.target_entity,
                "relationType": self.relation.relation_type,
            }
        wire["problem"] = self.problem
        wire["suggestion"] = self.suggestion
        return wire


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    """What a save_memory call did, or why it did nothing.

    Attributes:
        quality_score: how complete what was saved is, from 0 to 1 (see `entity_quality`);
            0 when nothing was saved.
    """

    problems: tuple[Problem, ...] = ()
    entities_created: int = 0
    entities_updated: int = 0
    relations_created: int = 0
    observations_added: int = 0
    warnings: tuple[str, ...] = ()
    quality_score: float = 0.0
    saved: tuple[str, ...] = ()
    """The names saved under, in request order (an alias given becomes the entity's name)."""
    clashes: tuple[tuple[str, Clash], ...] = ()
    """(entity, clash): current facts the saved ones may contradict (core/contradictions.py)."""
    created: tuple[Entity, ...] = ()
    """The entities the call created (their names and types)."""

    @property
    def success(self) -> bool:
        return not self.problems


def entity_quality(draft: EntityDraft, type_warnings: int) -> float:
    """How complete one entity is, from 0 to 1: the mean of four parts.

    - connected: its relations over 2 (two or more relations count fully);
    - atomic: the share of its observations that are a single sentence;
    - rich: its observations over 3 (three or more count fully);
    - conventional: 1 when its type needed no warning, 0.5 when it did.
    """
    connected = min(1.0, len(draft.relations) / 2)
    single = sum(validation.count_sentences(text) <= 1 for text in draft.observations)
    atomic = single / len(draft.observations) if draft.observations else 0.0
    rich = min(1.0, len(draft.observations) / 3)
    conventional = 0.5 if type_warnings else 1.0
    return (connected + atomic + rich + conventional) / 4


def save_memory(graph: KnowledgeGraph, drafts: Sequence[EntityDraft], thread_id: str) -> SaveOutcome:
    """Validate every entity, observation and relation, then save them all in one transaction."""
    advice = [validation.advise_entity_type(draft.entity_type) for draft in drafts]
    warnings = [warning for item in advice for warning in item.warnings]
    with graph.writing():
        in_request = {draft.name for draft in drafts}
        targets = [relation.target_entity for draft in drafts for relation in draft.relations]
        resolved = graph.resolve_names([*in_request, *targets])
        problems = _check_shapes(drafts, thread_id, graph.limits) + [
            Problem(
                draft.name,
                f"Target entity '{relation.target_entity}' not found in this request or in memory",
                "targetEntity must name another entity of this save_memory call or one already in memory "
                "(use search_nodes to find its exact name).",
                relation=relation,
            )
            for draft in drafts
            for relation in draft.relations
            if relation.target_entity not in in_request and relation.target_entity not in resolved
        ]
        if problems:
            return SaveOutcome(tuple(problems))
        written = _write(graph, drafts, advice, resolved, thread_id)
    scores = [entity_quality(draft, len(item.warnings)) for draft, item in zip(drafts, advice, strict=True)]
    return replace(written, warnings=tuple(warnings), quality_score=round(sum(scores) / len(scores), 2))


def _check_shapes(drafts: Sequence[EntityDraft], thread_id: str, limits: Limits) -> list[Problem]:
    """Every problem with the request itself, before looking at memory."""
    problems: list[Problem] = []
    if not thread_id.strip() or len(thread_id) > limits.max_name_length:
        problems.append(
            Problem("", f"threadId has {len(thread_id)} characters.", "Give the conversation's or project's thread ID.")
        )
    for draft in drafts:
        texts = [draft.name, draft.entity_type, thread_id, *draft.observations]
        texts += [text for pair in draft.attributes for text in pair]
        texts += [text for relation in draft.relations for text in (relation.target_entity, relation.relation_type)]
        if not all(validation.is_text(text) for text in texts):
            problems.append(
                Problem(
                    draft.name,
                    "A text contains an unpaired surrogate code point, which is not valid text.",
                    "Remove the broken character and send it again.",
                )
            )
        for items, what, most in (
            (draft.observations, "observations", limits.max_observations_per_item),
            (draft.relations, "relations", limits.max_batch_items),
        ):
            if len(items) > most:
                problems.append(
                    Problem(
                        draft.name, f"{len(items)} {what}, over the limit of {most}.", "Split it into several calls."
                    )
                )
    seen: set[str] = set()
    for draft in drafts:
        name = draft.name
        if not name.strip() or len(name) > validation.MAX_NAME_LENGTH:
            problems.append(
                Problem(
                    name,
                    f"Entity name has {len(name)} characters; it needs 1 to {validation.MAX_NAME_LENGTH}.",
                    "Use a short, specific name, e.g. 'Andrii' or 'Portfolio'.",
                )
            )
        if name in seen:
            problems.append(
                Problem(name, "The entity appears twice in this request.", "Give each entity once, with all its facts.")
            )
        seen.add(name)
        if not draft.entity_type.strip() or len(draft.entity_type) > validation.MAX_ENTITY_TYPE_LENGTH:
            problems.append(
                Problem(
                    name,
                    f"entityType has {len(draft.entity_type)} characters; it needs 1 to "
                    f"{validation.MAX_ENTITY_TYPE_LENGTH}.",
                    "Use a short type such as Person, Document, Task or a custom one like Patient.",
                )
            )
        if not draft.observations:
            problems.append(
                Problem(name, "Missing observations. Every entity needs at least 1.", "Add one short fact about it.")
            )
        for text in (*draft.observations, *(fact for _, fact in draft.attributes)):
            found = validation.observation_problem(text)
            if found is not None:
                problems.append(Problem(name, found[0], found[1], observation=text))
        for attribute, _ in draft.attributes:
            if not attribute.strip() or len(attribute) > validation.MAX_NAME_LENGTH:
                problems.append(
                    Problem(
                        name,
                        f"The attribute {attribute!r} has {len(attribute)} characters; it needs 1 to "
                        f"{validation.MAX_NAME_LENGTH}.",
                        "Name what the fact sets in a word or two, e.g. 'employer' or 'city'.",
                    )
                )
        if not draft.relations:
            problems.append(
                Problem(
                    name,
                    f"Entity '{name}' must have at least 1 relation. Missing relations.",
                    "Add relations to show connections: e.g., { targetEntity: 'Portfolio', relationType: 'updates' }",
                )
            )
        for relation in draft.relations:
            length = len(relation.relation_type)
            if not relation.relation_type.strip() or length > validation.MAX_RELATION_TYPE_LENGTH:
                problems.append(
                    Problem(
                        name,
                        f"relationType has {length} characters; it needs 1 to {validation.MAX_RELATION_TYPE_LENGTH}.",
                        "Use a short verb phrase in active voice, e.g. 'works at' or 'created'.",
                        relation=relation,
                    )
                )
    return problems


def _write(
    graph: KnowledgeGraph,
    drafts: Sequence[EntityDraft],
    advice: Sequence[validation.TypeAdvice],
    resolved: dict[str, str],
    thread_id: str,
) -> SaveOutcome:
    now = now_iso()
    created = updated = added_total = 0
    saved: list[str] = []
    clashes: list[tuple[str, Clash]] = []
    new_entities: list[Entity] = []
    for draft, item in zip(drafts, advice, strict=True):
        existing = resolved.get(draft.name)
        facts = [
            NewObservation(text, None, thread_id, draft.confidence, draft.importance)
            for text in dict.fromkeys(draft.observations)
        ] + [
            NewObservation(fact, None, thread_id, draft.confidence, draft.importance, attribute=attribute)
            for attribute, fact in draft.attributes
        ]
        if existing is None:
            projects.refuse_taken_elsewhere(graph.store, graph.scope, f"entities[{draft.name}]", [draft.name])
            extra = {**new_metadata(now, graph.author), "threadId": thread_id, "confidence": draft.confidence}
            extra["importance"] = draft.importance
            new_entity = Entity(draft.name, item.entity_type, (), extra, graph.scope.home)
            graph.store.insert_entities([with_records(new_entity, *new_records(facts, now, graph.author))])
            new_entities.append(new_entity)
            resolved[draft.name] = draft.name
            created += 1
            added_total += len(facts)
            saved.append(draft.name)
            continue
        change = change_observations(graph.store, existing, facts, (), now, f"entities[{draft.name}]", graph.author)
        clashes += [(existing, clash) for clash in change.clashes]
        entity = graph.store.get_entities([existing])[0]
        # New facts raised the version already; a call that added none still changed the thread.
        if change.added:
            extra = {**(entity.extra or {}), "threadId": thread_id, "importance": draft.importance}
        else:
            extra = touched(entity.extra, now, by=graph.author, threadId=thread_id, importance=draft.importance)
        graph.store.update_entity(
            existing, Entity(existing, entity.entity_type, entity.observations, extra, entity.project)
        )
        updated += 1
        added_total += len(change.added)
        saved.append(existing)
    relations: dict[tuple[str, str, str], Relation] = {}
    for draft, name in zip(drafts, saved, strict=True):
        for relation in draft.relations:
            target = resolved.get(relation.target_entity, relation.target_entity)
            extra = {**new_metadata(now, graph.author), "threadId": thread_id, "importance": relation.importance}
            relations.setdefault(
                (name, target, relation.relation_type), Relation(name, target, relation.relation_type, extra)
            )
    existing_keys = graph.store.existing_relations(list(relations))
    fresh = graph.in_their_projects([relation for key, relation in relations.items() if key not in existing_keys])
    graph.store.insert_relations(fresh)
    return SaveOutcome(
        entities_created=created,
        entities_updated=updated,
        relations_created=len(fresh),
        observations_added=added_total,
        saved=tuple(saved),
        clashes=tuple(clashes),
        created=tuple(new_entities),
    )
