"""The memory's MCP resources: their URIs and what reading one gives.

`memory://knowledge-graph` is the official server's whole-graph resource.
`memory://entity/{name}` is one entity, its observations and every relation touching
it; the name is percent-encoded (RFC 3986), so any name fits in the URI: an entity
named "a/b c" is `memory://entity/a%2Fb%20c`.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from graphmem.core.errors import InvalidInputError
from graphmem.domain.graph import KnowledgeGraph
from graphmem.tools.base import dump_json, entity_wire

__all__ = ["ENTITY_PREFIX", "ENTITY_TEMPLATE", "GRAPH_URI", "entity_document", "entity_name", "entity_uri"]

GRAPH_URI = "memory://knowledge-graph"
ENTITY_PREFIX = "memory://entity/"
ENTITY_TEMPLATE = ENTITY_PREFIX + "{name}"


def entity_uri(name: str) -> str:
    """The URI of the entity named `name`."""
    return ENTITY_PREFIX + quote(name, safe="")


def entity_name(uri: str) -> str | None:
    """The entity name an entity URI holds, decoded; None for a URI that is not an entity's.

    Raises:
        InvalidInputError: the URI names no entity (nothing after the prefix).
    """
    if not uri.startswith(ENTITY_PREFIX):
        return None
    encoded = uri[len(ENTITY_PREFIX) :]
    try:
        # unquote, not unquote_plus: "+" is a plus sign in a path, and a name may hold one.
        name = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise InvalidInputError(
            "uri", f"{uri} is not a name percent-encoded as UTF-8; encode the name's UTF-8 bytes."
        ) from None
    if not name:
        raise InvalidInputError("uri", f"{uri} names no entity; put the URL-encoded entity name after {ENTITY_PREFIX}.")
    return name


def entity_document(graph: KnowledgeGraph, name: str) -> str | None:
    """The entity resource's JSON text: the entity (by name or alias) and the relations touching it.

    None when no entity has that name or alias.
    """
    found = graph.open_nodes([name])
    if not found.entities:
        return None
    entity = found.entities[0]
    return dump_json({"entity": entity_wire(entity), "relations": [relation.to_wire() for relation in found.relations]})
