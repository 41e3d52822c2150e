"""graphmem: a persistent knowledge-graph memory for AI agents, served over MCP."""

from graphmem._version import __version__
from graphmem.core.errors import (
    AmbiguousNameError,
    ConfigError,
    DanglingRelationError,
    EntityNotFoundError,
    GraphmemError,
    ImportFormatError,
    InvalidInputError,
    MemoryOpenError,
    ProjectConflictError,
    RelationNotFoundError,
    SchemaVersionError,
    StorageBusyError,
    StorageError,
    TimeLimitError,
)
from graphmem.core.models import Entity, Graph, Relation
from graphmem.domain.graph import KnowledgeGraph

__all__ = [
    "AmbiguousNameError",
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
    "ProjectConflictError",
    "Relation",
    "RelationNotFoundError",
    "SchemaVersionError",
    "StorageBusyError",
    "StorageError",
    "TimeLimitError",
    "__version__",
]
