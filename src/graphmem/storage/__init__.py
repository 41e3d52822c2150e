"""Storage backends and the choice between them."""

from __future__ import annotations

from graphmem.config import Settings
from graphmem.storage.base import Store

__all__ = ["Store", "open_store"]


def open_store(settings: Settings) -> Store:
    """Open the memory the settings name: JSONL for `.jsonl`/`.json` files, SQLite otherwise."""
    if settings.backend == "jsonl":
        from graphmem.storage.jsonl import JsonlStore

        return JsonlStore(settings.memory_path)
    from graphmem.storage.sqlite import SQLiteStore

    return SQLiteStore(settings.memory_path)
