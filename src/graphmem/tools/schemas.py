"""The JSON Schemas of the official tools, written out as the official server lists them.

Clients and prompts depend on these exact shapes (field names, descriptions,
required lists, `additionalProperties:false` on outputs), so they are spelled out
here rather than generated, and a test compares them with the official `tools/list`.
"""

from __future__ import annotations

from typing import Any

from graphmem.core.limits import Limits

__all__ = [
    "BOUNDED_GRAPH_RESULT",
    "DRAFT",
    "DELETE_RESULT",
    "ENTITY",
    "ENTITY_WITH_ALIASES",
    "OBSERVATION_RECORD",
    "GRAPH_RESULT",
    "READ_GRAPH_INPUT",
    "READ_GRAPH_RESULT",
    "RELATION",
    "TRUNCATED",
    "closed",
    "input_schema",
    "output_schema",
]

_LIMITS = Limits()

# The official server (SDK 1.x with zod) stamps every schema with draft-07.
DRAFT = "http://json-schema.org/draft-07/schema#"

ENTITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The name of the entity"},
        "entityType": {"type": "string", "description": "The type of the entity"},
        "observations": {
            "type": "array",
            "items": {"type": "string"},
            "description": "An array of observation contents associated with the entity",
        },
    },
    "required": ["name", "entityType", "observations"],
}

RELATION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "description": "The name of the entity where the relation starts"},
        "to": {"type": "string", "description": "The name of the entity where the relation ends"},
        "relationType": {"type": "string", "description": "The type of the relation"},
    },
    "required": ["from", "to", "relationType"],
}


# An observation as a record (spec 003) with spec 001's versioning.
OBSERVATION_RECORD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "content": {"type": "string"},
        "version": {"type": "integer"},
        "createdAt": {"type": "string"},
        "threadId": {"type": "string"},
        "confidence": {"type": "number"},
        "importance": {"type": "number"},
        "supersedes": {"type": "string", "description": "The id of the observation this one corrected"},
        "supersededBy": {"type": "string", "description": "The id of the observation that corrected this one"},
        "status": {"type": "string", "description": "From an [S:Status] prefix: Active, Resolved, Archived, ..."},
        "timestamp": {"type": "string", "description": "From a [2025-04-08T10:00:00Z] prefix"},
    },
    "required": ["id", "content", "version"],
    "additionalProperties": False,
}

# An entity as the richer tools show it: the official keys, and its aliases when it has some.
ENTITY_WITH_ALIASES: dict[str, Any] = {
    "type": "object",
    "properties": {
        **ENTITY["properties"],
        "aliases": {"type": "array", "items": {"type": "string"}, "description": "Other names of the entity"},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
        "version": {"type": "integer"},
        "observationRecords": {
            "type": "array",
            "description": "The current observations with their ids and metadata (spec 003)",
            "items": OBSERVATION_RECORD,
        },
    },
    "required": ["name", "entityType", "observations"],
    "additionalProperties": False,
}


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The same object schema with `additionalProperties:false`, as output schemas are."""
    return {**schema, "additionalProperties": False}


def input_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"$schema": DRAFT, "type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def output_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


GRAPH_RESULT = output_schema(
    {
        "entities": {"type": "array", "items": closed(ENTITY)},
        "relations": {"type": "array", "items": closed(RELATION)},
    },
    ["entities", "relations"],
)

DELETE_RESULT = output_schema({"success": {"type": "boolean"}, "message": {"type": "string"}}, ["success", "message"])

TRUNCATED: dict[str, Any] = {
    "type": "object",
    "description": "Present when the answer was cut to the response budget: how many entities were left out "
    "and the offset to continue from.",
    "properties": {
        "omittedEntities": {"type": "integer"},
        "nextOffset": {"type": "integer"},
        "atLeast": {
            "type": "boolean",
            "description": "true when more entities match than were counted: omittedEntities is a lower bound",
        },
    },
    "required": ["omittedEntities", "nextOffset"],
    "additionalProperties": False,
}

# A graph answer that may be cut to the response budget: the official shape plus `truncated`.
BOUNDED_GRAPH_RESULT = {
    **GRAPH_RESULT,
    "properties": {**GRAPH_RESULT["properties"], "truncated": TRUNCATED},
}

_OUTLINE_BASE = {"name": {"type": "string"}, "entityType": {"type": "string"}}

READ_GRAPH_INPUT = input_schema(
    {
        "entityType": {"type": "string", "description": "Only entities of exactly this type"},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "maximum": _LIMITS.max_offset,
            "description": "How many entities to skip (default 0)",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": _LIMITS.max_offset,
            "description": "How many entities to return at most",
        },
        "mode": {
            "type": "string",
            "enum": ["full", "names", "summary"],
            "description": "full: entities with observations and relations (default); names: names and types "
            "only; summary: names, types and how many observations and relations each has",
        },
    },
    [],
)

# Which keys are present depends on `mode`, so none is required; a plain call answers
# with `entities` and `relations` exactly as the official server does.
READ_GRAPH_RESULT = output_schema(
    {
        "entities": GRAPH_RESULT["properties"]["entities"],
        "relations": GRAPH_RESULT["properties"]["relations"],
        "names": {"type": "array", "items": closed({"type": "object", "properties": _OUTLINE_BASE})},
        "summary": {
            "type": "array",
            "items": closed(
                {
                    "type": "object",
                    "properties": {
                        **_OUTLINE_BASE,
                        "observationCount": {"type": "integer"},
                        "relationCount": {"type": "integer"},
                    },
                }
            ),
        },
        "totalEntities": {"type": "integer", "description": "How many entities match, across all pages"},
        "truncated": TRUNCATED,
    },
    [],
)
