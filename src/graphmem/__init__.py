"""graphmem: a persistent knowledge-graph memory for AI agents, served over MCP."""

from graphmem._version import __version__
from graphmem.errors import (
    ConfigError,
    DanglingRelationError,
    EntityNotFoundError,
    GraphmemError,
    ImportFormatError,
    InvalidInputError,
    MemoryOpenError,
    RelationNotFoundError,
    SchemaVersionError,
    StorageBusyError,
    StorageError,
    TimeLimitError,
)
from graphmem.graph import KnowledgeGraph
from graphmem.models import Entity, Graph, Relation

__all__ = [
    "ConfigError",
    "DanglingRelationError",
    "Entity",
    "EntityNotFoundError",
    "Graph",
    "GraphmemError",
    "ImportFormatError",
    "InvalidInputError",
    "KnowledgeGraph",
    "MemoryOpenError",
    "Relation",
    "RelationNotFoundError",
    "SchemaVersionError",
    "StorageBusyError",
    "StorageError",
    "TimeLimitError",
    "__version__",
]
