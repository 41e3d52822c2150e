"""The numbered SQL migration scripts each backend ships in storage/migrations/<backend>/."""

from __future__ import annotations

from importlib import resources

__all__ = ["migration_scripts"]


def migration_scripts(backend: str) -> list[tuple[int, str]]:
    """Every script of `backend` ("sqlite", "postgres") as (number, SQL), in order: a file
    `0007_counts.sql` is number 7."""
    folder = resources.files("graphmem.storage") / "migrations" / backend
    found = []
    for item in folder.iterdir():
        if item.name.endswith(".sql"):
            found.append((int(item.name.split("_", 1)[0]), item.read_text(encoding="utf-8")))
    return sorted(found)
