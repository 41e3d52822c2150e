"""The JSON Schemas of the official tools, written out as the official server lists them.

Clients and prompts depend on these exact shapes (field names, descriptions,
required lists, `additionalProperties:false` on outputs), so they are spelled out
here rather than generated, and a test compares them with the official `tools/list`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DELETE_RESULT",
    "ENTITY",
    "GRAPH_PAGE_RESULT",
    "GRAPH_RESULT",
    "RELATION",
    "TRUNCATED",
    "closed",
    "input_schema",
    "output_schema",
]

# The official server (SDK 1.x with zod) stamps every schema with draft-07.
_DRAFT = "http://json-schema.org/draft-07/schema#"

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


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The same object schema with `additionalProperties:false`, as output schemas are."""
    return {**schema, "additionalProperties": False}


def input_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"$schema": _DRAFT, "type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def output_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "$schema": _DRAFT,
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

TRUNCATED: dict[str, Any] = {
    "type": "object",
    "description": "Present when the answer was cut to fit the response budget",
    "properties": {
        "omittedEntities": {"type": "integer", "description": "How many entities were left out"},
        "nextOffset": {"type": "integer", "description": "The offset that continues where this answer stopped"},
    },
    "required": ["omittedEntities", "nextOffset"],
    "additionalProperties": False,
}

GRAPH_PAGE_RESULT = output_schema(
    {
        "entities": {"type": "array", "items": closed(ENTITY)},
        "relations": {"type": "array", "items": closed(RELATION)},
        "truncated": TRUNCATED,
    },
    ["entities", "relations"],
)
"""A graph answer that may be cut to the response budget: `truncated` says what is left."""

DELETE_RESULT = output_schema({"success": {"type": "boolean"}, "message": {"type": "string"}}, ["success", "message"])
