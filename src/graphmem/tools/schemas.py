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
    "GRAPH_RESULT",
    "READ_GRAPH_INPUT",
    "READ_GRAPH_RESULT",
    "RELATION",
    "SEARCH_RESULT",
    "TRUNCATED",
    "closed",
    "arguments",
    "input_schema",
    "output_schema",
    "shape",
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


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The same object schema with `additionalProperties:false`, as output schemas are."""
    return {**schema, "additionalProperties": False}


def input_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An official tool's input schema, stamped with draft-07 as the official server's are."""
    return {"$schema": DRAFT, **arguments(properties, required)}


def arguments(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """The input schema of a tool beyond the official nine.

    No `$schema` stamp: MCP reads a schema without one as JSON Schema 2020-12, which means the
    same for every keyword used here, and the stamp costs 42 bytes of every listing.
    """
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def shape(required: dict[str, str], optional: dict[str, str] | None = None) -> dict[str, Any]:
    """The output schema of a tool beyond the official nine: its top-level keys and their JSON types.

    The model pays for every byte of a listing on every call, and reads the answer, not its
    schema; the full nested schemas cost 15 KB of the default listing, more than the nine
    official tools together. This is what a client that checks or types structured results
    needs: which keys come, which always do, and of what kind (the description says the rest).
    """
    every = {**required, **(optional or {})}
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in every.items()},
        "required": list(required),
        "additionalProperties": False,
    }


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

# The answer's text note says the same in words, so the schema carries no descriptions.
TRUNCATED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "omittedEntities": {"type": "integer"},
        "nextOffset": {"type": "integer"},
        # true when more entities match than were counted: omittedEntities is then a lower bound.
        "atLeast": {"type": "boolean"},
    },
    "required": ["omittedEntities", "nextOffset"],
    "additionalProperties": False,
}

# Read across every project, each entity's and relation's project, item for item (their
# official items stay as they are); only when the answer shows more than one.
PROJECT_LISTS: dict[str, Any] = {"projects": {"type": "array"}, "relationProjects": {"type": "array"}}

# The `project` argument every read takes: the server's project is the default.
PROJECT_ARGUMENT: dict[str, Any] = {"project": {"type": "string", "description": 'a project, "shared", or "*" for all'}}

# The `asOf` and `validAt` arguments the four main reads list (any read takes them): the memory
# as it stood then, and the facts that held in the world at a date.
AS_OF_ARGUMENT: dict[str, Any] = {
    "asOf": {"type": "string", "description": "ISO 8601: as the memory stood then"},
    "validAt": {"type": "string", "description": "Date: facts that held then"},
}

# A graph answer that may be cut to the response budget: the official shape plus `truncated`.
BOUNDED_GRAPH_RESULT = {
    **GRAPH_RESULT,
    "properties": {**GRAPH_RESULT["properties"], "truncated": TRUNCATED, **PROJECT_LISTS},
}

# A search's answer: a bounded graph, and whether meaning ranked it while part of the memory
# still waited for its vectors (those entities were ranked by their words).
SEARCH_RESULT = {
    **BOUNDED_GRAPH_RESULT,
    "properties": {**BOUNDED_GRAPH_RESULT["properties"], "partlyEmbedded": {"type": "boolean"}},
}

READ_GRAPH_INPUT = input_schema(
    {
        "entityType": {"type": "string"},
        "offset": {"type": "integer", "minimum": 0, "maximum": _LIMITS.max_offset},
        "limit": {"type": "integer", "minimum": 1, "maximum": _LIMITS.max_offset},
        "mode": {
            "type": "string",
            "enum": ["full", "names", "summary"],
            "description": "names: names and types only; summary: also how many observations and relations",
        },
        **PROJECT_ARGUMENT,
        **AS_OF_ARGUMENT,
    },
    [],
)

# Which keys are present depends on `mode`, so none is required; a plain call answers
# with `entities` and `relations` exactly as the official server does.
READ_GRAPH_RESULT = output_schema(
    {
        "entities": GRAPH_RESULT["properties"]["entities"],
        "relations": GRAPH_RESULT["properties"]["relations"],
        # graphmem's own modes: their items are plain (name, type, counts), shown in the answer.
        "names": {"type": "array"},
        "summary": {"type": "array"},
        "totalEntities": {"type": "integer"},
        "truncated": TRUNCATED,
        **PROJECT_LISTS,
    },
    [],
)
