"""Times as the metadata of specs 002 and 003 write them: ISO 8601 in UTC, to the millisecond."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["new_metadata", "now_iso", "touched"]


def now_iso() -> str:
    """Now, as `2026-01-20T15:30:00.000Z` (JavaScript's `toISOString()` format)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_metadata(now: str, author: str | None = None) -> dict[str, object]:
    """Spec 002's metadata of an entity or relation created at `now`, and `createdBy` when
    the change has an author (the name of a team member's token)."""
    if author is None:
        # No key at all: a memory served to one person keeps only the keys the specs name.
        return {"createdAt": now, "updatedAt": now, "version": 1}
    return {"createdAt": now, "updatedAt": now, "version": 1, "createdBy": author}


def touched(extra: dict[str, Any] | None, now: str, *, by: str | None = None, **changes: Any) -> dict[str, Any]:
    """Extra keys after a change at `now` made by `by`: `version` raised by one (from 1 when
    absent), `updatedAt` set, `updatedBy` set (removed when the change has no author, so it
    never names someone else's earlier change), and `changes` applied (a None value removes its key)."""
    bumped = dict(extra or {})
    version = bumped.get("version")
    bumped["version"] = (version if isinstance(version, int) and not isinstance(version, bool) else 1) + 1
    bumped["updatedAt"] = now
    bumped["updatedBy"] = by
    bumped.update(changes)
    return {key: value for key, value in bumped.items() if value is not None}
