"""Spec 001's tools: save_memory (validated, saved whole) and get_analytics (the state of a memory)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.core import validation
from graphmem.domain import analytics, saving
from graphmem.domain.duplicates import duplicates_of
from graphmem.domain.saving import EntityDraft, RelationDraft
from graphmem.tools import schemas
from graphmem.tools.base import READ, WRITE, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json, plural
from graphmem.tools.clash_notes import clash_note
from graphmem.tools.duplicate_notes import duplicate_note

__all__ = ["QUALITY_TOOLS"]


class _RelationIn(ToolArgs):
    target_entity: str = Field(alias="targetEntity")
    relation_type: str = Field(alias="relationType")
    importance: float = Field(default=saving.DEFAULT_RELATION_IMPORTANCE, ge=0, le=1)


class _EntityIn(ToolArgs):
    # Lengths and counts are checked by the rules, so a failed call lists every problem
    # in spec 001's shape instead of stopping at the first.
    name: str
    entity_type: str = Field(alias="entityType")
    observations: list[str]
    relations: list[_RelationIn]
    confidence: float = Field(default=saving.DEFAULT_CONFIDENCE, ge=0, le=1)
    importance: float = Field(default=saving.DEFAULT_ENTITY_IMPORTANCE, ge=0, le=1)
    attributes: dict[str, str] = Field(default_factory=dict)


class _SaveArgs(ToolArgs):
    entities: list[_EntityIn] = Field(min_length=1, max_length=1000)
    thread_id: str = Field(alias="threadId", min_length=1)


def save_memory(ctx: ToolContext, args: _SaveArgs) -> ToolOutput:
    drafts = [
        EntityDraft(
            item.name,
            item.entity_type,
            tuple(item.observations),
            tuple(RelationDraft(r.target_entity, r.relation_type, r.importance) for r in item.relations),
            item.confidence,
            item.importance,
            tuple(item.attributes.items()),
        )
        for item in args.entities
    ]
    outcome = saving.save_memory(ctx.graph, drafts, args.thread_id)
    structured: dict[str, Any] = {
        "success": outcome.success,
        "created": {
            "entities": outcome.entities_created,
            "relations": outcome.relations_created,
            "observations": outcome.observations_added,
        },
        "updated": {"entities": outcome.entities_updated},
        "warnings": list(outcome.warnings),
        "quality_score": outcome.quality_score,
    }
    if not outcome.success:
        structured["validation_errors"] = [problem.to_wire() for problem in outcome.problems]
        count = len(outcome.problems)
        summary = (
            f"Nothing was saved: {count} {plural(count, 'problem', 'problems')} to fix. "
            "Fix every item listed and call save_memory again with the whole request."
        )
        return ToolOutput(structured, summary, (dump_json(structured),), is_error=True)
    summary = (
        f"Saved: {outcome.entities_created} new {plural(outcome.entities_created, 'entity', 'entities')}, "
        f"{outcome.entities_updated} existing updated, {outcome.relations_created} new "
        f"{plural(outcome.relations_created, 'relation', 'relations')}; quality score {outcome.quality_score}."
    )
    notes = [
        note
        for note in (clash_note(outcome.clashes), duplicate_note(duplicates_of(ctx.graph, outcome.created)))
        if note is not None
    ]
    return ToolOutput(structured, summary, (dump_json(structured), *notes), changed=True)


class _AnalyticsArgs(ToolArgs):
    thread_id: Omittable[str] = Field(default=None, alias="threadId")
    limit: int = Field(default=10, ge=1, le=100)


def get_analytics(ctx: ToolContext, args: _AnalyticsArgs) -> ToolOutput:
    found = analytics.analytics(ctx.graph, args.thread_id, args.limit)
    structured = {
        "recent_changes": found.recent_changes,
        "top_important": found.top_important,
        "most_connected": found.most_connected,
        "orphaned_entities": found.orphaned_entities,
        "orphan_counts": found.orphan_counts,
    }
    return ToolOutput(structured, dump_json(structured))


_NUMBER_01 = {"type": "number", "minimum": 0, "maximum": 1}
_TEXT = {"type": "string", "minLength": 1}

QUALITY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="save_memory",
        title="Save Memory",
        description=(
            "Save entities with their relations, all or nothing; prefer it to create_entities plus "
            f"create_relations. Rules: each observation one fact of at most {validation.MAX_SENTENCES} "
            "sentences; each entity at least 1 relation (to this call or memory). validation_errors says "
            "what to fix."
        ),
        input_schema=schemas.arguments(
            {
                "entities": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {**_TEXT, "maxLength": validation.MAX_NAME_LENGTH},
                            "entityType": {
                                **_TEXT,
                                "maxLength": validation.MAX_ENTITY_TYPE_LENGTH,
                                "description": "Capitalised, e.g. Person, Project",
                            },
                            "observations": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "string",
                                    "minLength": validation.MIN_OBSERVATION_LENGTH,
                                    "maxLength": validation.MAX_OBSERVATION_LENGTH,
                                },
                            },
                            "relations": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "targetEntity": {"type": "string"},
                                        "relationType": {
                                            "type": "string",
                                            "maxLength": validation.MAX_RELATION_TYPE_LENGTH,
                                        },
                                        "importance": {**_NUMBER_01, "default": saving.DEFAULT_RELATION_IMPORTANCE},
                                    },
                                    "required": ["targetEntity", "relationType"],
                                },
                            },
                            "confidence": {**_NUMBER_01, "default": saving.DEFAULT_CONFIDENCE},
                            "importance": {**_NUMBER_01, "default": saving.DEFAULT_ENTITY_IMPORTANCE},
                            "attributes": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                                "description": 'Facts by what they set: {"employer": "Works at Acme"} replaces '
                                "the current employer",
                            },
                        },
                        "required": ["name", "entityType", "observations", "relations"],
                    },
                },
                "threadId": {**_TEXT, "description": "This conversation or project"},
            },
            ["entities", "threadId"],
        ),
        output_schema=schemas.shape(
            {
                "success": "boolean",
                "created": "object",
                "updated": "object",
                "warnings": "array",
                "quality_score": "number",
            },
            {"validation_errors": "array"},
        ),
        annotations=WRITE,
        arguments=_SaveArgs,
        run=save_memory,
    ),
    ToolSpec(
        name="get_analytics",
        title="Get Analytics",
        description=(
            "Get a memory's recent changes, most important and most connected entities, and orphans (no or "
            "broken relations), for one threadId or all. To review what was saved and what needs cleaning up."
        ),
        input_schema=schemas.arguments(
            {"threadId": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}}
        ),
        output_schema=schemas.shape(
            {
                "recent_changes": "array",
                "top_important": "array",
                "most_connected": "array",
                "orphaned_entities": "array",
                "orphan_counts": "object",
            }
        ),
        annotations=READ,
        arguments=_AnalyticsArgs,
        run=get_analytics,
    ),
)
