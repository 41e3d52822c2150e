"""Times as the metadata of specs 002 and 003 write them: ISO 8601 in UTC, to the millisecond."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["new_metadata", "now_iso"]


def now_iso() -> str:
    """Now, as `2026-01-20T15:30:00.000Z` (JavaScript's `toISOString()` format)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_metadata(now: str) -> dict[str, object]:
    """Spec 002's metadata of an entity or relation created at `now`."""
    return {"createdAt": now, "updatedAt": now, "version": 1}
