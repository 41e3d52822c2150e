"""`graphmem projects` and `graphmem project move|delete`: the projects of a memory, from the shell.

The commands read and write through the domain's rules (graphmem.domain.projects), as the
`list_projects` and `move_entities` tools do, across every project of the memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.core.projects import SHARED, project_name
from graphmem.storage.base import ProjectCounts

__all__ = ["project_table"]


def project_table(listed: Sequence[ProjectCounts], current: str | None) -> list[str]:
    """The lines that show each project: name, counts, last write, and its key when the name is not."""
    if not listed:
        return ["The memory is empty: no project holds anything yet."]
    rows = [("project", "entities", "relations", "facts", "last written", "key")]
    for counts in listed:
        name = project_name(counts.project) + (" (current)" if counts.project == current else "")
        key = "" if counts.project in (SHARED, project_name(counts.project)) else counts.project
        rows.append(
            (
                name,
                f"{counts.entities:,}",
                f"{counts.relations:,}",
                f"{counts.observations:,}",
                (counts.last_written or "")[:19].replace("T", " "),
                key,
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if 0 < column < 4 else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
