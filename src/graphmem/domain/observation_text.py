"""What an observation's text says about itself: the prefixes of spec 003.

A fork of the official server writes observations such as
`[2025-04-08T10:00:00Z] [S:Active] status: healthy`: an event time and a status in
brackets before the fact. graphmem stores the text as given and reads the prefixes
when it orders observations for context (`get_context_info`): current facts first,
then recent history, then the rest; archived facts are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["ObservationText", "context_order", "parse_observation"]

# One bracketed prefix at the start: an ISO-8601 time, or `S:` and a status word.
_PREFIX = re.compile(
    r"\s*\[(?:S:\s*(?P<status>[A-Za-z]+)|(?P<time>\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+)?(?:Z|[+-]\d{2}:?\d{2})?))\]"
)

ARCHIVED = "archived"
ACTIVE = "active"


@dataclass(frozen=True, slots=True)
class ObservationText:
    """An observation's text with what its prefixes say.

    Attributes:
        text: the observation as stored, prefixes included.
        timestamp: the event time of a `[2025-04-08T10:00:00Z]` prefix, in UTC.
        status: the status of an `[S:Active]` prefix, lower-cased (`active`, `resolved`, ...).
    """

    text: str
    timestamp: datetime | None
    status: str | None


def _parse_time(value: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    # A time without a zone is taken as UTC, so every time compares with every other.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_observation(text: str) -> ObservationText:
    """Read the `[time]` and `[S:Status]` prefixes, in either order, at the start of a text."""
    timestamp: datetime | None = None
    status: str | None = None
    position = 0
    while match := _PREFIX.match(text, position):
        if match.group("status") is not None and status is None:
            status = match.group("status").lower()
        elif match.group("time") is not None and timestamp is None:
            timestamp = _parse_time(match.group("time"))
        else:
            break
        position = match.end()
    return ObservationText(text, timestamp, status)


def context_order(observations: Iterable[str]) -> list[str]:
    """Observations for context: active ones first, then the newest timestamped, then the rest.

    Archived observations are left out. Within each group the stored order is kept,
    except timestamped history, which goes newest first.
    """
    parsed = [parse_observation(text) for text in observations]
    kept = [item for item in parsed if item.status != ARCHIVED]
    active = [item for item in kept if item.status == ACTIVE]
    timed = [item for item in kept if item.status != ACTIVE and item.timestamp is not None]
    rest = [item for item in kept if item.status != ACTIVE and item.timestamp is None]
    # sorted() is stable: observations with the same time keep their stored order.
    timed = sorted(timed, key=lambda item: item.timestamp or datetime.min.replace(tzinfo=UTC), reverse=True)
    return [item.text for item in active + timed + rest]
