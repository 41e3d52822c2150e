"""When a fact holds in the world (valid time), apart from when it was written.

A fact may say it holds from `validFrom` and until `validUntil`. Each is a day, a month or a
year (`2024-03-01`, `2024-03`, `2024`) or an instant (`2024-03-01T09:30:00Z`):

    validFrom  "2024-03"  ─► from 2024-03-01T00:00:00.000Z
    validUntil "2024-03"  ─► until 2024-04-01T00:00:00.000Z, not included: through March

so a period is whole at both ends, as a person means "from March until June". A time without
a zone is UTC. A fact holds at T when it has begun (`start <= T`) and not ended (`T < end`);
either side may be open.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = ["Validity", "bound", "end_of", "instant_of", "normalised", "start_of"]

_PERIOD = re.compile(r"(?P<year>\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?")
_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?")


def instant_of(moment: datetime) -> str:
    """A UTC datetime as kept: `2024-03-01T09:30:00.000Z`."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def normalised(value: object) -> str | None:
    """The value as it is kept: a period as written (`2024-03`), an instant in UTC to the
    millisecond; None when it is neither (2024-02-30 and 2024-13 are not dates)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    period = _PERIOD.fullmatch(text)
    if period is not None:
        return text if _first_moment(period) is not None else None
    if _INSTANT.fullmatch(text) is None:
        return None
    fraction = re.search(r"\.(\d+)", text)
    if fraction is not None:
        text = text[: fraction.start()] + "." + (fraction.group(1) + "000")[:3] + text[fraction.end() :]
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):  # 2024-02-30; an offset past the calendar's ends
        return None
    return instant_of(moment) if 1 <= moment.year <= 9999 else None


def _first_moment(period: re.Match[str]) -> datetime | None:
    try:
        return datetime(int(period["year"]), int(period["month"] or 1), int(period["day"] or 1), tzinfo=UTC)
    except ValueError:
        return None


def _after(period: re.Match[str]) -> datetime:
    """The first moment after a day, month or year."""
    year, month, day = int(period["year"]), period["month"], period["day"]
    if day is not None:
        start = datetime(year, int(month), int(day), tzinfo=UTC)
        return datetime.fromordinal(start.toordinal() + 1).replace(tzinfo=UTC)
    if month is not None:
        return datetime(year + int(month) // 12, int(month) % 12 + 1, 1, tzinfo=UTC)
    return datetime(year + 1, 1, 1, tzinfo=UTC)


def start_of(value: str) -> str:
    """The first instant of a kept bound (`normalised`)."""
    period = _PERIOD.fullmatch(value)
    if period is None:
        return value
    first = _first_moment(period)
    return value if first is None else instant_of(first)


def end_of(value: str) -> str:
    """The first instant after a kept `validUntil`: a period is included whole."""
    period = _PERIOD.fullmatch(value)
    if period is None:
        return value
    if int(period["year"]) == 9999 and (period["month"] in (None, "12")) and period["day"] in (None, "31"):
        return "9999-12-31T23:59:59.999Z"  # the end of time as this calendar has it
    return instant_of(_after(period))


def bound(value: object) -> str | None:
    """A `validAt` or `asOf`-like point as an instant: a period is its first moment."""
    kept = normalised(value)
    return None if kept is None else start_of(kept)


class Validity:
    """A fact's valid time: `start` and `end` as instants (None: open)."""

    __slots__ = ("end", "start")

    def __init__(self, valid_from: str | None, valid_until: str | None) -> None:
        # A bound that is no date (a record written elsewhere: "2024-02-30") leaves its side open.
        start, end = normalised(valid_from), normalised(valid_until)
        self.start = None if start is None else start_of(start)
        self.end = None if end is None else end_of(end)

    def holds_at(self, moment: str) -> bool:
        return (self.start is None or self.start <= moment) and (self.end is None or moment < self.end)

    def ended_by(self, moment: str) -> bool:
        return self.end is not None and self.end <= moment
