"""Facts of one entity that look like values of one attribute, none of them marked as such
("Works at Acme" and "Works at Initech"): shown to the agent as candidates, never changed
without its call (it may supersede one, or write the current value with an `attribute`).

Two facts look alike when they start with the same two words or more and go on differently:
the start names what is set ("works at", "lives in", "favourite colour is"), the rest its value.
A crude test, kept cheap and predictable; it names candidates, and a person or an agent decides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphmem.domain.observations import ObservationRecord

__all__ = ["SHARED_START_WORDS", "alike_facts"]

SHARED_START_WORDS = 2
"""Words two facts must start with alike to look like values of one attribute."""

_WORD = re.compile(r"\w+")


def alike_facts(records: Sequence[ObservationRecord]) -> list[tuple[str, list[str]]]:
    """Groups of current facts that start alike (the shared start, lower case, and the facts'
    ids), at least one of each group not marked with an attribute; in the order of their first fact."""
    groups: dict[str, list[ObservationRecord]] = {}
    for record in records:
        words = _WORD.findall(record.content.lower())
        if len(words) > SHARED_START_WORDS:
            groups.setdefault(" ".join(words[:SHARED_START_WORDS]), []).append(record)
    found = []
    for start, members in groups.items():
        values = {record.content.lower() for record in members}
        unmarked = [record for record in members if record.attribute is None]
        marked = {record.attribute for record in members if record.attribute is not None}
        # Alike, and not already one attribute's single value beside other attributes' values.
        if len(values) > 1 and unmarked and len(marked) <= 1:
            found.append((start, [record.id for record in members]))
    return found
