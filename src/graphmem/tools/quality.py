"""Spec 001's tools: save_memory (validated, saved whole) and get_analytics (the state of a memory)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from graphmem.core import validation
from graphmem.domain import analytics, saving
from graphmem.domain.saving import EntityDraft, RelationDraft
from graphmem.tools import schemas
from graphmem.tools.base import READ, WRITE, Omittable, ToolArgs, ToolContext, ToolOutput, ToolSpec, dump_json, plural

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
    return ToolOutput(structured, summary, (dump_json(structured),), changed=True)


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


def _rows(**properties: dict[str, Any]) -> dict[str, Any]:
    """A list of entities of one analytics metric, each with these properties besides its name and type."""
    return {
        "type": "array",
        "items": schemas.closed(
            {
                "type": "object",
                "properties": {"entityName": {"type": "string"}, "entityType": {"type": "string"}, **properties},
                "required": ["entityName", "entityType", *properties],
            }
        ),
    }


QUALITY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="save_memory",
        title="Save Memory",
        description=(
            "Save entities and their relations to the memory graph in one all-or-nothing call. RULES: 1) Each "
            f"observation is one atomic fact of {validation.MIN_OBSERVATION_LENGTH} to "
            f"{validation.MAX_OBSERVATION_LENGTH} characters and at most {validation.MAX_SENTENCES} sentences. "
            "2) Each entity MUST have at least 1 relation, to another entity of the same call or one already in "
            "memory. If any item breaks a rule nothing is saved and validation_errors says what to fix. Entities "
            "already in memory gain the new observations. Prefer it to create_entities plus create_relations."
        ),
        input_schema=schemas.input_schema(
            {
                "entities": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": validation.MAX_NAME_LENGTH},
                            "entityType": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": validation.MAX_ENTITY_TYPE_LENGTH,
                                "description": "Type of entity (e.g., Person, Document, File, or custom types "
                                "like Patient, API); start with a capital letter",
                            },
                            "observations": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "string",
                                    "minLength": validation.MIN_OBSERVATION_LENGTH,
                                    "maxLength": validation.MAX_OBSERVATION_LENGTH,
                                },
                                "description": "Array of atomic facts. Each must be ONE fact, max "
                                f"{validation.MAX_OBSERVATION_LENGTH} chars.",
                            },
                            "relations": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "targetEntity": {
                                            "type": "string",
                                            "description": "Name of the entity to connect to (in this request "
                                            "or already in memory)",
                                        },
                                        "relationType": {
                                            "type": "string",
                                            "maxLength": validation.MAX_RELATION_TYPE_LENGTH,
                                            "description": "Type of relationship (e.g., 'created by', 'contains')",
                                        },
                                        "importance": {**_NUMBER_01, "default": saving.DEFAULT_RELATION_IMPORTANCE},
                                    },
                                    "required": ["targetEntity", "relationType"],
                                },
                                "description": "REQUIRED: Every entity must have at least 1 relation",
                            },
                            "confidence": {**_NUMBER_01, "default": saving.DEFAULT_CONFIDENCE},
                            "importance": {**_NUMBER_01, "default": saving.DEFAULT_ENTITY_IMPORTANCE},
                        },
                        "required": ["name", "entityType", "observations", "relations"],
                    },
                },
                "threadId": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Thread ID for this conversation/project",
                },
            },
            ["entities", "threadId"],
        ),
        output_schema=schemas.output_schema(
            {
                "success": {"type": "boolean"},
                "created": schemas.closed(
                    {
                        "type": "object",
                        "properties": {
                            "entities": {"type": "integer"},
                            "relations": {"type": "integer"},
                            "observations": {"type": "integer"},
                        },
                        "required": ["entities", "relations", "observations"],
                    }
                ),
                "updated": schemas.closed(
                    {
                        "type": "object",
                        "properties": {
                            "entities": {
                                "type": "integer",
                                "description": "Entities already in memory that gained observations",
                            }
                        },
                        "required": ["entities"],
                    }
                ),
                "warnings": {"type": "array", "items": {"type": "string"}},
                "quality_score": {"type": "number", "minimum": 0, "maximum": 1},
                "validation_errors": {
                    "type": "array",
                    "items": schemas.closed(
                        {
                            "type": "object",
                            "properties": {
                                "error": {"type": "string"},
                                "entity": {"type": "string"},
                                "observation": {"type": "string"},
                                "relation": schemas.closed(
                                    {
                                        "type": "object",
                                        "properties": {
                                            "targetEntity": {"type": "string"},
                                            "relationType": {"type": "string"},
                                        },
                                        "required": ["targetEntity", "relationType"],
                                    }
                                ),
                                "problem": {"type": "string"},
                                "suggestion": {"type": "string"},
                            },
                            "required": ["error", "entity", "problem", "suggestion"],
                        }
                    ),
                },
            },
            ["success", "created", "updated", "warnings", "quality_score"],
        ),
        annotations=WRITE,
        arguments=_SaveArgs,
        run=save_memory,
    ),
    ToolSpec(
        name="get_analytics",
        title="Get Analytics",
        description=(
            "Get four views of the memory's state, for one thread (threadId) or all: recent_changes (latest "
            "updated first), top_important (by importance), most_connected (most relations, with the names they "
            "connect to) and orphaned_entities (no relations, or a relation to a name that is not an entity). "
            "Use it to review what a conversation saved and to find what needs relations or cleaning up."
        ),
        input_schema=schemas.input_schema(
            {
                "threadId": {"type": "string", "description": "Only entities saved in this thread"},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100,
                    "default": 10,
                    "description": "How many entities each list holds at most",
                },
            },
            [],
        ),
        output_schema=schemas.output_schema(
            {
                "recent_changes": _rows(
                    lastModified={"type": ["string", "null"]},
                    changeType={"type": "string", "enum": ["created", "updated"]},
                ),
                "top_important": _rows(importance={"type": "number"}, observationCount={"type": "integer"}),
                "most_connected": _rows(
                    relationCount={"type": "integer"}, connectedTo={"type": "array", "items": {"type": "string"}}
                ),
                "orphaned_entities": _rows(reason={"type": "string", "enum": ["no_relations", "broken_relation"]}),
                "orphan_counts": schemas.closed(
                    {
                        "type": "object",
                        "description": "How many entities have no relation, and how many names relations use "
                        "without an entity, in all",
                        "properties": {"noRelations": {"type": "integer"}, "danglingNames": {"type": "integer"}},
                        "required": ["noRelations", "danglingNames"],
                    }
                ),
            },
            ["recent_changes", "top_important", "most_connected", "orphaned_entities", "orphan_counts"],
        ),
        annotations=READ,
        arguments=_AnalyticsArgs,
        run=get_analytics,
    ),
)
