"""What an answer says when a fact just written may contradict one the entity holds
(core/contradictions.py): both are kept, and the note gives the one call that would make the
new fact replace the old. Bounded: a few named, the rest counted."""

from __future__ import annotations

import json
from collections.abc import Sequence

from graphmem.core.contradictions import Clash

__all__ = ["clash_note"]

_NAMED = 3
"""Clashes a note names one by one; past them it counts."""

_QUOTED = 80
"""Characters of a fact a note quotes."""


def _quoted(text: str) -> str:
    return json.dumps(text if len(text) <= _QUOTED else text[: _QUOTED - 1] + "…", ensure_ascii=False)


def clash_note(clashes: Sequence[tuple[str, Clash]]) -> str | None:
    """The note for (entity, clash) pairs, or None when there are none."""
    if not clashes:
        return None
    lines = []
    for entity, clash in clashes[:_NAMED]:
        if len(clash.new) <= _QUOTED:
            replacing = json.dumps(
                {"observations": [{"entityName": entity, "contents": [clash.new], "supersedes": [clash.fact_id]}]},
                ensure_ascii=False,
            )
        else:  # the call would repeat a long fact whole: said in words instead
            replacing = f"that fact as contents and supersedes [{json.dumps(clash.fact_id)}]"
        lines.append(
            f"{_quoted(clash.new)} may contradict {clash.fact_id} {_quoted(clash.fact)} of {entity[:_QUOTED]} "
            f"({clash.rule}: {clash.about[:_QUOTED]}). If it replaces it, call add_observations with {replacing}."
        )
    more = len(clashes) - _NAMED
    if more > 0:
        lines.append(f"And {more} more such pair{'s' if more > 1 else ''}; get_entity shows the facts with their ids.")
    return "Both facts were kept. " + " ".join(lines) + " If both hold, nothing needs doing."
