"""Projects: where an entity lives, and what a call sees (design/projects-and-time.md).

Every entity and relation belongs to one project or to the shared space (the project key
`SHARED`, ""). A call runs in a `Scope`:

- a project's scope sees that project and the shared space, and what it creates goes to the
  project;
- `EVERY` sees every project, and what it creates goes to the shared space. A memory that never
  had projects holds only the shared space, so `EVERY` is graphmem as it was before projects.

A name is unique within a project and within the shared space, and no project may hold a name
the shared space holds: in a project's scope a name means at most one entity. Only `EVERY`
can see one name twice (two projects each with a `README.md`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALL_PROJECTS", "EVERY", "SHARED", "SHARED_NAME", "Scope", "project_name"]

SHARED = ""
"""The project key of the shared space, which every project sees."""

SHARED_NAME = "shared"
"""How people and the `project` argument name the shared space."""

ALL_PROJECTS = "*"
"""How the `project` argument asks for every project at once."""


@dataclass(frozen=True, slots=True)
class Scope:
    """What a transaction sees and where it creates.

    Attributes:
        project: the project key the call works in; None for every project at once.
    """

    project: str | None = None

    @property
    def every(self) -> bool:
        """Whether the scope sees every project (no filter at all)."""
        return self.project is None

    @property
    def visible(self) -> tuple[str, ...]:
        """The project keys the scope sees (empty for every project)."""
        if self.project is None:
            return ()
        return (SHARED,) if self.project == SHARED else (SHARED, self.project)

    @property
    def own_project(self) -> str | None:
        """The one project the scope sees beside the shared space; None when it sees every
        project or the shared space alone. A search in it ranks as a memory of what it sees
        alone would rank it (docs/projects.md)."""
        return None if self.project is None or self.project == SHARED else self.project

    @property
    def home(self) -> str:
        """Where an entity created in this scope goes."""
        return SHARED if self.project is None else self.project

    def sees(self, project: str) -> bool:
        return self.project is None or project in (SHARED, self.project)


EVERY = Scope()
"""Every project at once: the scope of a server without projects."""


def project_name(project: str) -> str:
    """The short name people see for a project key: the last part of a remote or a path
    (`github.com/acme/api` and `/home/a/api` are both `api`), a given name as it is, and
    `shared` for the shared space."""
    if project == SHARED:
        return SHARED_NAME
    tail = project.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return tail or project
