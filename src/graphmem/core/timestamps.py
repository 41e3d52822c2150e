"""Times as the metadata of specs 002 and 003 write them: ISO 8601 in UTC, to the millisecond."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["new_metadata", "now_iso", "touched"]


def now_iso() -> str:
    """Now, as `2026-01-20T15:30:00.000Z` (JavaScript's `toISOString()` format)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_metadata(now: str) -> dict[str, object]:
    """Spec 002's metadata of an entity or relation created at `now`."""
    return {"createdAt": now, "updatedAt": now, "version": 1}


def touched(extra: dict[str, Any] | None, now: str, **changes: Any) -> dict[str, Any]:
    """Extra keys after a change at `now`: `version` raised by one (from 1 when absent),
    `updatedAt` set, and `changes` applied (a None value removes its key)."""
    bumped = dict(extra or {})
    version = bumped.get("version")
    bumped["version"] = (version if isinstance(version, int) and not isinstance(version, bool) else 1) + 1
    bumped["updatedAt"] = now
    bumped.update(changes)
    return {key: value for key, value in bumped.items() if value is not None}
