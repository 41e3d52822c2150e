"""The exceptions graphmem raises; every one is a `GraphmemError`.

Messages are written for the model (or person) that made the call: they say what
was wrong and what to do next, in one sentence or two.

    GraphmemError
    ├── InvalidInputError          an argument breaks a rule or a documented limit
    │   └── DanglingRelationError  a relation names an entity that does not exist (--strict)
    ├── EntityNotFoundError        add_observations on a name that is not in memory
    ├── ConfigError                a setting from the environment or a flag is unusable
    ├── ImportFormatError          a line of an imported file cannot be understood
    └── StorageError               the backend failed; raised only from storage/
        ├── StorageBusyError       another process held the memory for too long
        ├── MemoryOpenError        the memory cannot be opened (start-up)
        ├── TimeLimitError         a call ran past the time limit and was stopped
        └── SchemaVersionError     the memory was written by a newer graphmem
"""

from __future__ import annotations

__all__ = [
    "AmbiguousNameError",
    "ConfigError",
    "DanglingRelationError",
    "EntityNotFoundError",
    "GraphmemError",
    "ImportFormatError",
    "InvalidInputError",
    "MemoryOpenError",
    "ProjectConflictError",
    "RelationNotFoundError",
    "SchemaVersionError",
    "StorageBusyError",
    "StorageError",
    "TimeLimitError",
]


class GraphmemError(Exception):
    """Base class of every error graphmem raises on purpose."""


class InvalidInputError(GraphmemError):
    """An argument is malformed or over a limit; nothing was changed.

    Attributes:
        field: where the problem is, as a path into the arguments (`entities[2].name`).
        problem: what is wrong with it, including the advice on what to send instead.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"Invalid argument {field}: {problem}")


class DanglingRelationError(InvalidInputError):
    """In strict mode, a relation whose endpoints are not all in memory rejects its batch."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        names = ", ".join(missing)
        super().__init__(
            "relations",
            f"no entity named {names} exists, so nothing was saved (strict mode); "
            "create the entities first with create_entities, then retry.",
        )
        # The base class builds a message with a prefix; strict-mode users want the plain one.
        self.args = (f"Entity with name {missing[0]} not found. {self.problem[0].upper()}{self.problem[1:]}",)


class AmbiguousNameError(InvalidInputError):
    """Seen across every project at once, a name is an entity in more than one project: a write
    that names it must say which (nothing was changed)."""

    def __init__(self, field: str, name: str, projects: list[str]) -> None:
        self.name = name
        self.projects = projects
        listed = ", ".join(repr(project or "shared") for project in projects)
        super().__init__(
            field,
            f"{name!r} is an entity in more than one project ({listed}); nothing was changed. Pass `project` "
            "with the one you mean, or start the server with --project.",
        )


class ProjectConflictError(InvalidInputError):
    """A write would give a project a name it already sees, or join two projects."""


class EntityNotFoundError(GraphmemError):
    """An operation that needs an existing entity named one that is not in memory.

    The message starts with the official server's exact wording, which clients match on.
    """

    _WRITE_HINT = "Nothing was saved; create it with create_entities first, or use search_nodes to find the exact name."
    READ_HINT = "Names are exact and case-sensitive (an alias works too); use search_nodes to find the right name."

    def __init__(self, name: str, hint: str = _WRITE_HINT) -> None:
        self.name = name
        super().__init__(f"Entity with name {name} not found. {hint}")


class RelationNotFoundError(GraphmemError):
    """An operation that needs an existing relation named one that is not in memory."""

    def __init__(self, from_: str, to: str, relation_type: str) -> None:
        self.key = (from_, to, relation_type)
        super().__init__(
            f"Relation {from_} -{relation_type}-> {to} not found. Nothing was changed; relations match on the "
            "exact from, to and relationType: use search_relations or open_nodes to find it."
        )


class ConfigError(GraphmemError):
    """A setting cannot be used, named with its key and the offending value."""

    def __init__(self, key: str, value: str, reason: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"Config {key!r} has value {value!r}. {reason}")


class ImportFormatError(GraphmemError):
    """A line of a file being imported is not a knowledge-graph record."""

    def __init__(self, line_no: int, reason: str) -> None:
        self.line_no = line_no
        self.reason = reason
        super().__init__(f"Line {line_no}: {reason}")


class StorageError(GraphmemError):
    """The storage backend failed; the operation was rolled back."""


class StorageBusyError(StorageError):
    """Another process kept the memory locked for longer than the wait limit."""


class MemoryOpenError(StorageError):
    """The memory cannot be opened: the message names the file, the cause and what to do."""

    def __init__(self, location: str, cause: str, advice: str) -> None:
        self.location = location
        self.cause = cause
        super().__init__(f"Cannot open the memory at {location}: {cause}. {advice}")


class TimeLimitError(StorageError):
    """A call ran past the server's time limit; it was stopped and rolled back."""


class SchemaVersionError(StorageError):
    """The memory's schema is newer than this graphmem understands."""
